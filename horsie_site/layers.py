"""The embedded channel layer: Channels' in-memory layer, safe to send to from any loop.

In the embedded default, turns run on their own event loop in a background thread while
websocket consumers wait on the server's loop. Channels' in-memory layer keeps an asyncio
queue per channel, which must only be touched from the loop that waits on it. This layer
remembers that loop when a consumer starts receiving and hands each send over to it. The
sender does not wait for the other loop to take it, only, at its next send to the same
channel, for the one before: order is kept, and the last send of a burst costs no round trip. A
group send goes to its channels one after another, not as a task each gathered with
`as_completed` (a turn sends five or so events, each to every watcher: that machinery cost
more than the sends). Each message is copied for its receiver, as Channels' layer does, but by a
copy that knows JSON's types (a few times faster than `deepcopy`); expired messages and group
members are swept at most once a second, not on every send (a sweep walks every channel and
group, and they expire after a minute). Synchronous code in this process can also `listen` to a
group: its listener is called with every message sent to the group, on the sender's thread, with
no channel, queue or loop between (a `?wait` request's thread waits on it, where a channel would
cost it four hops between threads). With `REDIS_URL` set, the Redis layer is used instead and none of this
applies.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from copy import deepcopy
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer

log = logging.getLogger(__name__)
SWEEP_SECONDS = 1.0
IMMUTABLE = frozenset({str, int, float, bool, bytes, type(None)})


def copied(value: Any) -> Any:
    """A deep copy of a message made of dicts, lists and scalars; anything else by `deepcopy`."""
    kind = type(value)
    if kind is dict:
        return {key: copied(item) for key, item in value.items()}
    if kind is list:
        return [copied(item) for item in value]
    if kind in IMMUTABLE:
        return value
    return deepcopy(value)


class EmbeddedChannelLayer(InMemoryChannelLayer):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.receiver_loops: dict[str, asyncio.AbstractEventLoop] = {}
        self.last_handoff: dict[str, concurrent.futures.Future[None]] = {}
        self.lock = threading.Lock()
        self.swept = 0.0
        self.listeners: dict[str, tuple[Callable[[dict[str, Any]], None], ...]] = {}

    def listen(self, group: str, listener: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        """Call `listener` with each message sent to `group` from now on, until the function
        returned is called. It runs on the sender's thread: it must be quick, never raise,
        and not change the message."""
        self.require_valid_group_name(group)
        with self.lock:
            self.listeners[group] = (*self.listeners.get(group, ()), listener)

        def stop() -> None:
            with self.lock:
                left = tuple(item for item in self.listeners.get(group, ()) if item is not listener)
                if left:
                    self.listeners[group] = left
                else:
                    self.listeners.pop(group, None)

        return stop

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now - self.swept >= SWEEP_SECONDS:
            self.swept = now
            super()._clean_expired()

    async def put(self, channel: str, message: dict[str, Any]) -> None:
        """Channels' `send`, with `copied` for its `deepcopy` and one queue made per channel."""
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_channel_name(channel)
        assert "__asgi_channel__" not in message
        item = (time.time() + self.expiry, copied(message))
        with self.lock:  # with the receiver's drop of an empty queue: never into a dropped one
            queue = self.channels.get(channel)
            if queue is None:
                queue = self.channels[channel] = asyncio.Queue(maxsize=self.get_capacity(channel))
            try:
                queue.put_nowait(item)
            except asyncio.QueueFull:
                raise ChannelFull(channel) from None

    async def receive(self, channel: str) -> dict[str, Any]:
        """Channels' `receive`, but a queue left empty is dropped under the lock a sender on
        another thread puts under: a message put between the check and the drop was lost."""
        self.receiver_loops[channel] = asyncio.get_running_loop()
        try:
            self.require_valid_channel_name(channel)
            self._clean_expired()
            with self.lock:
                queue = self.channels.get(channel)
                if queue is None:
                    queue = self.channels[channel] = asyncio.Queue(
                        maxsize=self.get_capacity(channel)
                    )
            try:
                _, message = await queue.get()
            finally:
                with self.lock:
                    if queue.empty() and self.channels.get(channel) is queue:
                        del self.channels[channel]
            return message  # type: ignore[no-any-return]
        finally:
            self.receiver_loops.pop(channel, None)

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        """As Channels' own, a full channel skipped, but with no task per channel."""
        assert isinstance(message, dict), "Message is not a dict"
        self.require_valid_group_name(group)
        self._clean_expired()
        for listener in self.listeners.get(group, ()):
            listener(message)
        for channel in list(self.groups.get(group, ())):
            with contextlib.suppress(ChannelFull):
                await self.send(channel, message)

    async def send_after(self, channel: str, message: dict[str, Any]) -> None:
        loop = self.receiver_loops.get(channel)
        here = asyncio.get_running_loop()
        if loop is None or loop is here or loop.is_closed():
            return await self.put(channel, message)
        handoff = asyncio.run_coroutine_threadsafe(self.put(channel, message), loop)
        with self.lock:
            self.last_handoff[channel] = handoff
        handoff.add_done_callback(lambda done: self.handed_over(channel, done))
        return None

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        # A send waits for the last one handed over to the same channel, so it lands after
        # it whichever way it goes; the last of a burst (a turn's final status) waits for
        # nothing.
        with self.lock:
            previous = self.last_handoff.get(channel)
        if previous is not None and not previous.done():
            await asyncio.wait({asyncio.wrap_future(previous)})  # its failure is logged there
        await self.send_after(channel, message)

    def handed_over(self, channel: str, handoff: concurrent.futures.Future[None]) -> None:
        with self.lock:
            if self.last_handoff.get(channel) is handoff:
                del self.last_handoff[channel]
        if not handoff.cancelled() and handoff.exception() is not None:
            log.error("a message for another loop was not delivered", exc_info=handoff.exception())
