"""Django's ASGI handler, with each request's synchronous code on a thread kept for reuse.

Django runs a request's synchronous code (the middleware, a sync view) on a thread of the
request's own: asgiref makes a one-thread executor per request and shuts it down at the end.
Starting that thread cost the event loop about 0.3 ms per request, with the loop blocked
while the thread came up. asgiref lets the caller own the executor of a request's
thread-sensitive context, so the handler takes an idle one from a pool and gives it back when
the request is over, as a threaded WSGI server keeps its threads. An executor still running
work (a view that outlived its client's disconnect) is not given back: it finishes and ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.http import FileResponse, HttpResponseBase
from django.urls import set_script_prefix

from sessions_app import outbox

IDLE_KEPT = 16


class RequestThread(ThreadPoolExecutor):
    """One thread, and how much of what was sent to it is not done yet."""

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix="horsie-request")
        self.pending = 0
        self.lock = threading.Lock()

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self.lock:
            self.pending += 1
        future = super().submit(fn, *args, **kwargs)
        future.add_done_callback(self.done)
        return future

    def done(self, _: Future[Any]) -> None:
        with self.lock:
            self.pending -= 1


class RequestThreads:
    def __init__(self, kept: int = IDLE_KEPT) -> None:
        self.kept = kept
        self.idle: list[RequestThread] = []
        self.lock = threading.Lock()

    def take(self) -> RequestThread:
        with self.lock:
            if self.idle:
                return self.idle.pop()
        return RequestThread()

    def give(self, executor: RequestThread) -> None:
        with self.lock, executor.lock:
            if executor.pending == 0 and len(self.idle) < self.kept:
                self.idle.append(executor)
                return
        executor.shutdown(wait=False)


class PooledASGIHandler(ASGIHandler):
    threads = RequestThreads()

    def load_middleware(self, is_async: bool = False) -> None:
        """The middleware chain and the view run synchronously, inside `answer`'s one hop.
        Django's asynchronous chain ends in an asynchronous handler, so with synchronous
        middleware (ours) and synchronous views a request hopped to its thread, back to the
        loop at the innermost middleware, and to the thread again for the view, plus a hop
        for each `process_view`: about 0.5 ms a request, the loop busy for each."""
        super().load_middleware(is_async=False)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = self.threads.take()
        try:
            with outbox.serving():
                async with ThreadSensitiveContext(executor=executor):
                    await self.handle(scope, receive, send)
        finally:
            self.threads.give(executor)

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Django's, with everything synchronous in one hop to the request's thread.

        Django hops three times: to send `request_started`, to run the middleware and the
        view, and to close the response once it is sent (which sends `request_finished`).
        A response whose body is bytes can be closed before it is sent, as a WSGI server
        closes it once its body is read, so `answer` does all three in one hop. A streamed
        response is still closed after its last part. A client that goes away meanwhile
        cancels the sending, as in Django."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        tasks = [
            asyncio.create_task(self.listen_for_disconnect(receive)),
            asyncio.create_task(self.respond(scope, body_file, send)),
        ]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                try:
                    with contextlib.suppress(RequestAborted):
                        task.result()
                except AssertionError:
                    body_file.close()
                    raise
            else:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        try:
            streamed = tasks[1].result()
        except asyncio.CancelledError:
            await signals.request_finished.asend(sender=self.__class__)
        else:
            if streamed is not None:
                await sync_to_async(streamed.close)()
        body_file.close()

    async def respond(
        self, scope: dict[str, Any], body_file: Any, send: Any
    ) -> HttpResponseBase | None:
        """Answer and send; the response still to close (a streamed one), else None."""
        response = await sync_to_async(self.answer, thread_sensitive=True)(scope, body_file)
        with contextlib.suppress(asyncio.CancelledError):  # the client went away meanwhile
            await self.send_response(response, send)
        return response if response.streaming else None

    def answer(self, scope: dict[str, Any], body_file: Any) -> HttpResponseBase:
        """On the request's thread: `request_started`, the response, and its close unless it
        is streamed."""
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body_file)
        if request is not None:
            response = self.get_response(request)
            response._handler_class = self.__class__
            if isinstance(response, FileResponse):
                response.block_size = self.chunk_size
        if not response.streaming:
            response.close()
        return response
