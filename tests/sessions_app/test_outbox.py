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


def served_request(request, names: list[str]) -> tuple[list[str], list[str]]:
    """Run `request(slow, fast)` as a request's synchronous code on a serving loop: `slow`
    (first of `names`) is held until the request is over, `fast` sends at once. Returns
    what was sent while the request ran, and what was sent in the end, in order."""
    from asgiref.sync import sync_to_async

    sent: list[str] = []

    async def main() -> list[str]:
        gate, both = asyncio.Event(), asyncio.Event()

        async def slow() -> None:
            await asyncio.wait_for(gate.wait(), timeout=5)  # a request that waited: fails
            sent.append(names[0])
            if len(sent) == 2:
                both.set()

        async def fast() -> None:
            sent.append(names[1])
            if len(sent) == 2:
                both.set()

        def run() -> list[str]:
            request(slow, fast)
            return list(sent)

        with outbox.serving():
            seen = await sync_to_async(run, thread_sensitive=False)()
        gate.set()
        await asyncio.wait_for(both.wait(), timeout=10)
        return seen

    seen = asyncio.run(main())
    return seen, sent


def test_a_requests_batches_go_to_its_loop_without_waiting_and_arrive_in_order():
    def request(slow, fast) -> None:
        for send in (slow, fast):
            with outbox.batched():
                outbox.post(send)

    seen, sent = served_request(request, ["first", "second"])
    assert seen == [], "the request went on before anything was delivered"
    assert sent == ["first", "second"], "the second batch waited for the first"


def test_with_no_serving_loop_a_batch_is_delivered_before_the_block_ends():
    sent: list[str] = []

    async def send() -> None:
        sent.append("now")

    with outbox.batched():
        outbox.post(send)
    assert sent == ["now"]


def test_a_post_outside_a_batch_keeps_its_place_after_the_batches_before_it():
    def request(slow, fast) -> None:
        with outbox.batched():
            outbox.post(slow)
        outbox.post(fast)

    _, sent = served_request(request, ["batched", "alone"])
    assert sent == ["batched", "alone"]
