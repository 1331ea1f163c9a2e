"""Deliveries from synchronous code to the channel layer, batched into one hop.

Events (sent after commit) and turn dispatches are async calls on the channel layer; made
from a thread, each one would hop to the event loop and back on its own. Code that runs a
batch of database work opens an outbox: what it posts is kept, in order, and delivered once
the work returns. A turn runner's database calls (`threads.db`) collect on the worker thread
and deliver on the runner's own loop, with no hop at all; a request's turn start delivers
its status, entries and dispatch in one hop. Without an open outbox a post is delivered at
once, as before. Whatever was posted is delivered even when the work then fails: it
describes things already committed.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator

from asgiref.sync import async_to_sync

log = logging.getLogger(__name__)

Send = Callable[[], Awaitable[None]]
_local = threading.local()


def post(send: Send) -> None:
    box: list[Send] | None = getattr(_local, "box", None)
    if box is None:
        async_to_sync(deliver)([send])
    else:
        box.append(send)


@contextlib.contextmanager
def collecting(box: list[Send]) -> Iterator[list[Send]]:
    """Posts made on this thread inside the block go to `box` (nested blocks: the outer's)."""
    outer = getattr(_local, "box", None)
    _local.box = box if outer is None else outer
    try:
        yield _local.box
    finally:
        _local.box = outer


@contextlib.contextmanager
def batched() -> Iterator[None]:
    """Deliver what the block posts in one hop at its end (within an open outbox: by it)."""
    if getattr(_local, "box", None) is not None:
        yield
        return
    box: list[Send] = []
    try:
        with collecting(box):
            yield
    finally:
        if box:
            async_to_sync(deliver)(box)


async def deliver(box: list[Send]) -> None:
    for send in box:
        try:
            await send()
        except Exception:  # one lost event must not stop the others, nor the turn
            log.exception("a channel-layer delivery failed")
