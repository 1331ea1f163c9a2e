"""The embedded channel layer: Channels' in-memory layer, safe to send to from any loop.

In the embedded default, turns run on their own event loop in a background thread while
websocket consumers wait on the server's loop. Channels' in-memory layer keeps an asyncio
queue per channel, which must only be touched from the loop that waits on it. This layer
remembers that loop when a consumer starts receiving and hands each send over to it. With
`REDIS_URL` set, the Redis layer is used instead and none of this applies.
"""

from __future__ import annotations

import asyncio
from typing import Any

from channels.layers import InMemoryChannelLayer


class EmbeddedChannelLayer(InMemoryChannelLayer):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.receiver_loops: dict[str, asyncio.AbstractEventLoop] = {}

    async def receive(self, channel: str) -> dict[str, Any]:
        self.receiver_loops[channel] = asyncio.get_running_loop()
        try:
            return await super().receive(channel)
        finally:
            self.receiver_loops.pop(channel, None)

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        loop = self.receiver_loops.get(channel)
        here = asyncio.get_running_loop()
        if loop is None or loop is here or loop.is_closed():
            return await super().send(channel, message)
        handoff = asyncio.run_coroutine_threadsafe(super().send(channel, message), loop)
        await asyncio.wrap_future(handoff)
        return None
