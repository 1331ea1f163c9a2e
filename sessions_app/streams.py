"""The reply text in flight, kept chunk by chunk so a watcher who joins mid-reply gets it all.

Each delta appends its chunk; nothing is ever rewritten, so a reply of n characters costs
O(n) to keep, not O(n²) as rewriting the whole text on every delta did. A stream is a list
whose first item is the stream's id and the rest its chunks in order: a reader gets the id
and the text in one read, and a chunk can only ever join the stream it was written for (a
push names its stream, and is dropped when the list is gone or is another stream's: a
runner that lost its lease cannot write into, or end, its successor's reply).

With Redis (`REDIS_URL`) the list lives in Redis, shared by the worker that writes and the
web processes that read, and expires `STREAM_TTL` after its last chunk (a runner that dies
leaves nothing for long); it is reached from async code through a client per event loop.
The embedded default keeps it in this process, where its turns run.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any, Protocol

import redis
import redis.asyncio
from django.conf import settings

STREAM_TTL = 600
# KEYS[1] the stream's list; ARGV[1] the stream it must be; ARGV[2] a chunk to append (with
# ARGV[3] the new expiry), or none to end the stream.
OWNED = """
if redis.call('LINDEX', KEYS[1], 0) ~= ARGV[1] then return 0 end
if ARGV[2] then
  redis.call('RPUSH', KEYS[1], ARGV[2])
  redis.call('EXPIRE', KEYS[1], ARGV[3])
else
  redis.call('DEL', KEYS[1])
end
return 1
"""


class Streams(Protocol):
    async def begin(self, session_id: int, stream: str) -> None: ...
    async def append(self, session_id: int, stream: str, text: str) -> None: ...
    async def read(self, session_id: int) -> tuple[str, str] | None: ...
    async def end(self, session_id: int, stream: str) -> None: ...
    def forget(self, session_id: int) -> None: ...


class LocalStreams:
    """In this process: the turn thread writes, the server's loop reads."""

    def __init__(self) -> None:
        self.lists: dict[int, list[str]] = {}
        self.lock = threading.Lock()

    async def begin(self, session_id: int, stream: str) -> None:
        with self.lock:
            self.lists[session_id] = [stream]

    async def append(self, session_id: int, stream: str, text: str) -> None:
        with self.lock:
            chunks = self.lists.get(session_id)
            if chunks is not None and chunks[0] == stream:
                chunks.append(text)

    async def read(self, session_id: int) -> tuple[str, str] | None:
        with self.lock:
            chunks = list(self.lists.get(session_id) or ())
        return (chunks[0], "".join(chunks[1:])) if chunks else None

    async def end(self, session_id: int, stream: str) -> None:
        with self.lock:
            if (self.lists.get(session_id) or [None])[0] == stream:
                del self.lists[session_id]

    def forget(self, session_id: int) -> None:
        with self.lock:
            self.lists.pop(session_id, None)


class RedisStreams:
    """In Redis: a script appends only to the stream it names; each write is one round trip."""

    def __init__(self, url: str, prefix: str) -> None:
        self.url, self.prefix = url, prefix
        self.clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )
        self.sync = redis.Redis.from_url(url)
        self.scripts: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )

    def key(self, session_id: int) -> str:
        return f"{self.prefix}:stream:{session_id}"

    def client(self) -> Any:
        loop = asyncio.get_running_loop()
        client = self.clients.get(loop)
        if client is None:
            client = self.clients[loop] = redis.asyncio.Redis.from_url(self.url)
        return client

    async def begin(self, session_id: int, stream: str) -> None:
        key = self.key(session_id)
        async with self.client().pipeline(transaction=True) as pipe:
            await pipe.delete(key).rpush(key, stream).expire(key, STREAM_TTL).execute()

    def owned(self) -> Any:
        """The script that writes to, or ends, a stream only while it is the one named."""
        loop = asyncio.get_running_loop()
        script = self.scripts.get(loop)
        if script is None:
            script = self.scripts[loop] = self.client().register_script(OWNED)
        return script

    async def append(self, session_id: int, stream: str, text: str) -> None:
        await self.owned()(keys=[self.key(session_id)], args=[stream, text, STREAM_TTL])

    async def read(self, session_id: int) -> tuple[str, str] | None:
        items = await self.client().lrange(self.key(session_id), 0, -1)
        if not items:
            return None
        texts = [item.decode("utf-8") for item in items]
        return texts[0], "".join(texts[1:])

    async def end(self, session_id: int, stream: str) -> None:
        await self.owned()(keys=[self.key(session_id)], args=[stream])

    def forget(self, session_id: int) -> None:
        self.sync.delete(self.key(session_id))


_streams: Streams | None = None
_made = threading.Lock()


def streams() -> Streams:
    """The process's streams, on Redis when the deployment has it."""
    global _streams
    with _made:
        if _streams is None:
            url = settings.REDIS_URL
            _streams = RedisStreams(url, settings.REDIS_PREFIX) if url else LocalStreams()
        return _streams
