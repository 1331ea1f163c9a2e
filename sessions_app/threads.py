"""How turn code reaches the database: on a worker thread of the runner's own loop.

The turn runs on its own event loop (the in-process turn thread, or a `runworker`), with no
request around it, so asgiref's thread-sensitive mode would funnel every turn's queries
through the one thread that also serves synchronous request code. Turns use the loop's
thread pool instead, and Channels' wrapper closes connections that went stale. Events the
work sends after commit are collected on that thread (`outbox`) and delivered from the
runner's loop when the work returns: no hop back per event. A runner cancelled meanwhile
waits for its thread to finish first, so what the thread committed is still told.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from channels.db import database_sync_to_async

from sessions_app import outbox


def db(function: Callable[..., Any]) -> Callable[..., Any]:
    async def run(*args: Any, **kwargs: Any) -> Any:
        box: list[outbox.Send] = []

        def collected() -> Any:
            with outbox.collecting(box):
                return function(*args, **kwargs)

        work = asyncio.ensure_future(database_sync_to_async(collected, thread_sensitive=False)())
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            # The thread goes on when the runner is cancelled: what it still commits is
            # announced once it is done, never lost with the runner.
            await asyncio.wait({work})
            raise
        finally:
            await outbox.deliver(box)

    return run
