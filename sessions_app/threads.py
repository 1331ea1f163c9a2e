"""How turn code reaches the database: on a worker thread of the runner's own loop.

The turn runs on its own event loop (the in-process turn thread, or a `runworker`), with no
request around it, so asgiref's thread-sensitive mode would funnel every turn's queries
through the one thread that also serves synchronous request code. Turns use the loop's
thread pool instead, directly (asgiref's wrapper costs more than a turn's query does:
about 0.1 ms a call), closing connections that went stale before and after, as Channels'
wrapper does. Events the
work sends after commit are collected on that thread (`outbox`) and delivered from the
runner's loop when the work returns: no hop back per event. A runner cancelled meanwhile
waits for its thread to finish first, so what the thread committed is still told.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import Any

from django.db import close_old_connections

from sessions_app import outbox


def db(function: Callable[..., Any]) -> Callable[..., Any]:
    async def run(*args: Any, **kwargs: Any) -> Any:
        box: list[outbox.Send] = []

        def collected() -> Any:
            close_old_connections()
            try:
                with outbox.collecting(box):
                    return function(*args, **kwargs)
            finally:
                close_old_connections()

        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        work = loop.run_in_executor(None, context.run, collected)
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
