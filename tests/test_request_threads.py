"""Request threads kept for reuse (`horsie_site.request_threads`): one request after another
runs its synchronous code on the same thread, and a thread still busy is never handed on."""

from __future__ import annotations

import asyncio
import threading

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
