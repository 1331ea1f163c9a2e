"""How turn code reaches the database: on a worker thread of the runner's own loop.

The turn runs on its own event loop (the in-process turn thread, or a `runworker`), with no
request around it, so asgiref's thread-sensitive mode would funnel every turn's queries
through the one thread that also serves synchronous request code. Turns use the loop's
thread pool instead, and Channels' wrapper closes connections that went stale.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from channels.db import database_sync_to_async


def db(function: Callable[..., Any]) -> Any:
    return database_sync_to_async(function, thread_sensitive=False)
