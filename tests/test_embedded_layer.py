"""The embedded channel layer hands a send to the receiver's loop without waiting for it to
be taken there: messages from one sender still arrive in the order sent, and a send that
fails on the other loop is logged."""

from __future__ import annotations

import asyncio
import logging
import threading

from horsie_site.layers import SWEEP_SECONDS, EmbeddedChannelLayer, copied


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
        put = EmbeddedChannelLayer.put

        async def refused(self, channel, message):
            if message["n"] == 0:
                raise RuntimeError("refused")
            await put(self, channel, message)

        monkeypatch.setattr(EmbeddedChannelLayer, "put", refused)

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


def test_a_group_send_reaches_every_member_past_a_full_one_each_its_own_copy():
    layer = EmbeddedChannelLayer(capacity=2)

    async def run() -> None:
        members = [await layer.new_channel() for _ in range(3)]
        for member in members:
            await layer.group_add("session.1", member)
        full = members[1]
        for n in range(2):
            await layer.send(full, {"type": "x", "n": -n})
        message = {"type": "x", "n": 1, "entry": {"text": "hi"}}
        await layer.group_send("session.1", message)
        got = [await layer.receive(m) for m in (members[0], members[2])]
        assert [g["n"] for g in got] == [1, 1]
        assert got[0] is not got[1] and got[0]["entry"] is not message["entry"]
        assert [(await layer.receive(full))["n"] for _ in range(2)] == [0, -1]
        await layer.group_send("session.2", message)  # nobody in it: nothing happens

    asyncio.run(run())


def test_a_message_is_copied_deep_whatever_it_holds():
    inner = {"text": "hi", "tags": ["a", {"b": 1}]}
    odd = {1, 2}
    message = {"type": "x", "entry": inner, "pair": (inner, 1), "odd": odd, "n": 1.5, "z": None}
    copy = copied(message)
    assert copy == message
    assert copy["entry"] is not inner and copy["entry"]["tags"][1] is not inner["tags"][1]
    assert copy["pair"][0] is not inner and copy["odd"] is not odd  # the rest: by deepcopy


def test_expired_messages_are_swept_at_most_once_a_second():
    layer = EmbeddedChannelLayer(expiry=-1)  # every message has expired when it is put

    async def put(channel: str) -> None:
        await layer.group_add("session.1", channel)
        await layer.send(channel, {"type": "x"})

    asyncio.run(put("first"))
    layer._clean_expired()
    assert "first" not in layer.channels and "first" not in layer.groups.get("session.1", {})
    asyncio.run(put("second"))
    layer._clean_expired()  # within the second: no sweep
    assert "second" in layer.channels
    layer.swept -= SWEEP_SECONDS
    layer._clean_expired()
    assert "second" not in layer.channels and not layer.groups["session.1"]
