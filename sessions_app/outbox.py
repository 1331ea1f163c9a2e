"""Deliveries from synchronous code to the channel layer, batched into one hop.

Events (sent after commit) and turn dispatches are async calls on the channel layer; made
from a thread, each one would hop to the event loop and back on its own. Code that runs a
batch of database work opens an outbox: what it posts is kept, in order, and delivered once
the work returns. A turn runner's database calls (`threads.db`) collect on the worker thread
and deliver on the runner's own loop, with no hop at all; a request's turn start delivers
its status, entries and dispatch without waiting: the batch is handed to the loop serving
the request (`serving`), which delivers the batches handed to it one after another, in the
order they came, while the request goes on. Elsewhere (no serving loop: a management
command, a test's client) a batch is delivered in one hop that waits. Without an open
outbox a post is a batch of its own. Whatever was posted is delivered even when the work then
fails: it describes things already committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterator

from asgiref.sync import async_to_sync

log = logging.getLogger(__name__)

Send = Callable[[], Awaitable[None]]
_local = threading.local()
# The loop a request is served on: its synchronous code (on a thread of its own, which
# inherits the request's context) hands batches to it.
_serving: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "outbox_serving", default=None
)
# Per loop, the last batch handed to it: the next one is delivered after it. Touched on
# that loop only.
_last: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Future[None]] = (
    weakref.WeakKeyDictionary()
)


@contextlib.contextmanager
def serving() -> Iterator[None]:
    """Inside the block (on a loop), synchronous code it runs hands its batches to the loop."""
    token = _serving.set(asyncio.get_running_loop())
    try:
        yield
    finally:
        _serving.reset(token)


def post(send: Send) -> None:
    box: list[Send] | None = getattr(_local, "box", None)
    if box is None:
        hand_over([send])  # a batch of one, in order with the batches before it
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
            hand_over(box)


def hand_over(box: list[Send]) -> None:
    """Deliver `box` on the serving loop without waiting, after what it was handed before;
    with none, in one hop that waits."""
    loop = _serving.get()
    if loop is None or loop.is_closed():
        async_to_sync(deliver)(box)
        return
    try:
        loop.call_soon_threadsafe(_queued, loop, box)
    except RuntimeError:  # closed meanwhile: the process is going down
        log.warning("%d channel-layer deliveries dropped: the loop is closed", len(box))


def _queued(loop: asyncio.AbstractEventLoop, box: list[Send]) -> None:
    task = asyncio.ensure_future(_after(_last.get(loop), box))
    _last[loop] = task
    task.add_done_callback(lambda _: _last.pop(loop, None) if _last.get(loop) is task else None)


async def _after(previous: asyncio.Future[None] | None, box: list[Send]) -> None:
    if previous is not None and not previous.done():
        await asyncio.wait({previous})
    await deliver(box)


async def deliver(box: list[Send]) -> None:
    for send in box:
        try:
            await send()
        except Exception:  # one lost event must not stop the others, nor the turn
            log.exception("a channel-layer delivery failed")
