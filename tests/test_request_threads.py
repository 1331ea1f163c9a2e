"""Request threads kept for reuse (`horsie_site.request_threads`): one request after another
runs its synchronous code on the same thread, and a thread still busy is never handed on."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from asgiref.sync import ThreadSensitiveContext, sync_to_async

from horsie_site.request_threads import RequestThreads


async def thread_of_a_request(threads: RequestThreads) -> int:
    """What the handler does around a request, with its sync code asking its thread's id."""
    executor = threads.take()
    try:
        async with ThreadSensitiveContext(executor=executor):
            return await sync_to_async(threading.get_ident)()
    finally:
        threads.give(executor)


def test_one_request_after_another_runs_on_the_same_thread():
    threads = RequestThreads()

    async def two() -> tuple[int, int]:
        return await thread_of_a_request(threads), await thread_of_a_request(threads)

    first, second = asyncio.run(two())
    assert first == second != threading.get_ident()


def test_requests_at_once_each_get_a_thread_of_their_own():
    threads = RequestThreads()

    async def both() -> list[int]:
        return list(await asyncio.gather(*(thread_of_a_request(threads) for _ in range(2))))

    assert len(set(asyncio.run(both()))) == 2  # neither waited for the other's thread
    assert len(threads.idle) == 2


def test_a_thread_still_at_work_is_not_given_back():
    threads = RequestThreads()
    executor = threads.take()
    release = threading.Event()
    busy = executor.submit(release.wait, 30)
    threads.give(executor)  # the request is over, the view it ran is not
    assert threads.idle == []
    assert threads.take() is not executor
    release.set()
    assert busy.result(timeout=30) is True


def test_at_most_the_kept_number_wait_idle():
    threads = RequestThreads(kept=1)
    first, second = threads.take(), threads.take()
    threads.give(first)
    threads.give(second)
    assert threads.idle == [first]


def asgi_get(path: str) -> tuple[int, bytes, list[str]]:
    """GET `path` through the handler Horsie serves with; the status, the body, and what it
    ran through `sync_to_async` (each a hop to the request's thread and back)."""
    from asgiref import sync

    from horsie_site.request_threads import PooledASGIHandler

    hops: list[str] = []
    real = sync.SyncToAsync.__call__

    async def counted(self: sync.SyncToAsync, *args: object, **kwargs: object) -> object:
        hops.append(getattr(self.func, "__qualname__", type(self.func).__name__))
        return await real(self, *args, **kwargs)

    async def run() -> list[dict]:
        sent: list[dict] = []
        inbox: asyncio.Queue[dict] = asyncio.Queue()
        inbox.put_nowait({"type": "http.request", "body": b"", "more_body": False})

        async def send(message: dict) -> None:
            sent.append(message)

        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
            "scheme": "http", "path": path, "root_path": "", "query_string": b"",
            "headers": [(b"host", b"localhost")], "server": ("localhost", 80),
            "client": ("127.0.0.1", 1),
        }  # fmt: skip
        await PooledASGIHandler()(scope, inbox.get, send)
        return sent

    sync.SyncToAsync.__call__ = counted  # type: ignore[method-assign]
    try:
        sent = asyncio.run(run())
    finally:
        sync.SyncToAsync.__call__ = real  # type: ignore[method-assign]
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:]), hops


@pytest.mark.django_db
def test_a_request_is_one_hop_to_the_request_thread():
    status, body, hops = asgi_get("/api/v1/openapi.json")
    assert status == 200 and json.loads(body)["openapi"]
    # request_started, the middleware, the view and the response's close, all in one hop:
    # no hop of Django's own around the request, none for `process_view` (CSRF).
    assert hops == ["PooledASGIHandler.answer"]


def served_in_order(response: object) -> list[str]:
    """What happens, in order, when the handler serves `response` (its view's answer): the
    signals Django sends around a request, on which thread, and each message sent."""
    from django.core.signals import request_finished, request_started

    from horsie_site.request_threads import PooledASGIHandler

    happened: list[str] = []
    loop_thread = threading.get_ident()

    def signalled(name: str):  # noqa: ANN202
        def receiver(**_: object) -> None:
            where = "loop" if threading.get_ident() == loop_thread else "thread"
            happened.append(f"{name} on the {where}")

        return receiver

    started, finished = signalled("started"), signalled("finished")
    request_started.connect(started)
    request_finished.connect(finished)
    handler = PooledASGIHandler()
    handler.get_response = lambda request: response  # type: ignore[method-assign,assignment]

    async def run() -> None:
        inbox: asyncio.Queue[dict] = asyncio.Queue()
        inbox.put_nowait({"type": "http.request", "body": b"", "more_body": False})

        async def send(message: dict) -> None:
            happened.append(f"{message['type']} {message.get('body', b'')!r}")

        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
            "scheme": "http", "path": "/", "root_path": "", "query_string": b"",
            "headers": [(b"host", b"localhost")], "server": ("localhost", 80),
            "client": ("127.0.0.1", 1),
        }  # fmt: skip
        await handler(scope, inbox.get, send)

    try:
        asyncio.run(run())
    finally:
        request_started.disconnect(started)
        request_finished.disconnect(finished)
    return happened


def test_a_response_of_bytes_is_closed_on_its_thread_then_sent():
    from django.http import HttpResponse

    assert served_in_order(HttpResponse(b"whole")) == [
        "started on the thread",
        "finished on the thread",
        "http.response.start b''",
        "http.response.body b'whole'",
    ]


def test_a_streamed_response_is_closed_once_its_last_part_is_sent():
    from django.http import StreamingHttpResponse

    async def parts():  # noqa: ANN202
        yield b"one"
        yield b"two"

    assert served_in_order(StreamingHttpResponse(parts())) == [
        "started on the thread",
        "http.response.start b''",
        "http.response.body b'one'",
        "http.response.body b'two'",
        "http.response.body b''",
        "finished on the thread",
    ]
