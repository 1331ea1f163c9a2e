"""The embedded channel layer hands a send to the receiver's loop without waiting for it to
be taken there: messages from one sender still arrive in the order sent, and a send that
fails on the other loop is logged."""

from __future__ import annotations

import asyncio
import logging
import threading

from channels.layers import InMemoryChannelLayer

from horsie_site.layers import EmbeddedChannelLayer


class LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)


def receiving(layer: EmbeddedChannelLayer, receiver: LoopThread, count: int):
    """`count` messages received on the receiver's loop, as a consumer does: one receive
    after another, handling each in between."""
    started = threading.Event()

    async def receive_all() -> list[int]:
        got = []
        for _ in range(count):
            pending = asyncio.ensure_future(layer.receive("watcher"))
            await asyncio.sleep(0)
            started.set()
            got.append((await pending)["n"])
            await asyncio.sleep(0)  # handling it: not in a receive meanwhile
        return got

    future = asyncio.run_coroutine_threadsafe(receive_all(), receiver.loop)
    assert started.wait(30)
    return future


def test_messages_from_another_loop_arrive_in_the_order_sent():
    layer = EmbeddedChannelLayer(capacity=10_000)
    receiver = LoopThread()
    try:
        received = receiving(layer, receiver, 2000)

        async def send_all() -> None:
            for n in range(2000):
                await layer.send("watcher", {"type": "x", "n": n})

        asyncio.run(send_all())
        assert received.result(30) == list(range(2000))
    finally:
        receiver.close()


def test_a_send_that_fails_on_the_other_loop_is_logged(caplog, monkeypatch):
    layer = EmbeddedChannelLayer()
    receiver = LoopThread()
    try:
        received = receiving(layer, receiver, 1)
        send = InMemoryChannelLayer.send

        async def refused(self, channel, message):
            if message["n"] == 0:
                raise RuntimeError("refused")
            await send(self, channel, message)

        monkeypatch.setattr(InMemoryChannelLayer, "send", refused)

        async def two() -> None:
            await layer.send("watcher", {"type": "x", "n": 0})
            await layer.send("watcher", {"type": "x", "n": 1})

        with caplog.at_level(logging.ERROR, logger="horsie_site.layers"):
            asyncio.run(two())
            assert received.result(30) == [1]
        assert any("not delivered" in r.message for r in caplog.records)
    finally:
        receiver.close()


def test_a_send_after_the_receiver_left_its_receive_lands_after_the_one_handed_over():
    """The receiver takes a message and leaves `receive` while the next message is still
    on its way to its loop: the one after that, sent directly, must not overtake it."""
    layer = EmbeddedChannelLayer()
    receiver = LoopThread()
    gate = threading.Event()
    try:
        layer.receiver_loops["watcher"] = receiver.loop  # a receive is in progress there
        receiver.loop.call_soon_threadsafe(gate.wait, 30)  # and its loop is busy a while

        async def send_both() -> None:
            await layer.send("watcher", {"type": "x", "n": 0})  # handed over, not taken yet
            layer.receiver_loops.pop("watcher")  # the receive returned meanwhile
            second = asyncio.ensure_future(layer.send("watcher", {"type": "x", "n": 1}))
            await asyncio.sleep(0)  # the second send runs as far as it can
            gate.set()
            await second

        asyncio.run(send_both())

        async def both() -> list[int]:
            return [(await layer.receive("watcher"))["n"] for _ in range(2)]

        assert asyncio.run_coroutine_threadsafe(both(), receiver.loop).result(30) == [0, 1]
    finally:
        gate.set()
        receiver.close()
