"""What database work posts for the channel layer is delivered after the work, in order, once
per batch; and when the runner awaiting the work is cancelled mid-way, the thread's work
still finishes and what it posted is still delivered."""

from __future__ import annotations

import asyncio
import threading

import pytest

from sessions_app import outbox
from sessions_app.threads import db


def posting(sent, names, started=None, release=None):
    def work():
        if started is not None:
            started.set()
            assert release.wait(10)
        for name in names:

            async def send(name=name):
                sent.append((name, threading.current_thread().name))

            outbox.post(send)
        return len(names)

    return work


def test_posts_are_delivered_after_the_work_in_order_on_the_loop():
    sent = []

    async def main():
        return await db(posting(sent, ["a", "b", "c"]))()

    assert asyncio.run(main()) == 3
    assert [name for name, _ in sent] == ["a", "b", "c"]
    assert {thread for _, thread in sent} == {threading.current_thread().name}


def test_a_cancelled_runner_still_delivers_what_its_thread_posted():
    sent, started, release = [], threading.Event(), threading.Event()

    async def main():
        runner = asyncio.ensure_future(db(posting(sent, ["late"], started, release))())
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
        runner.cancel()
        await asyncio.sleep(0.05)
        assert not runner.done(), "the runner waits for its thread"
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await runner

    asyncio.run(main())
    assert [name for name, _ in sent] == ["late"]


def test_a_requests_batches_go_to_its_loop_without_waiting_and_arrive_in_order():
    from asgiref.sync import sync_to_async

    sent: list[str] = []

    async def main() -> list[str]:
        gate = asyncio.Event()

        async def slow() -> None:
            await gate.wait()
            sent.append("first")

        async def fast() -> None:
            sent.append("second")

        def request() -> list[str]:
            for send in (slow, fast):
                with outbox.batched():
                    outbox.post(send)
            return list(sent)

        with outbox.serving():
            seen = await sync_to_async(request, thread_sensitive=False)()
        gate.set()
        for _ in range(100):
            if len(sent) == 2:
                break
            await asyncio.sleep(0.01)
        return seen

    assert asyncio.run(main()) == [], "the request went on before anything was delivered"
    assert sent == ["first", "second"], "the second batch waited for the first"


def test_with_no_serving_loop_a_batch_is_delivered_before_the_block_ends():
    sent: list[str] = []

    async def send() -> None:
        sent.append("now")

    with outbox.batched():
        outbox.post(send)
    assert sent == ["now"]


def test_a_post_outside_a_batch_keeps_its_place_after_the_batches_before_it():
    from asgiref.sync import sync_to_async

    sent: list[str] = []

    async def main() -> None:
        gate = asyncio.Event()

        async def slow() -> None:
            await gate.wait()
            sent.append("batched")

        async def alone() -> None:
            sent.append("alone")

        def request() -> None:
            with outbox.batched():
                outbox.post(slow)
            outbox.post(alone)

        with outbox.serving():
            await sync_to_async(request, thread_sensitive=False)()
        gate.set()
        for _ in range(100):
            if len(sent) == 2:
                break
            await asyncio.sleep(0.01)

    asyncio.run(main())
    assert sent == ["batched", "alone"]
