"""Waiting for a session to settle, for `?wait=`: listen for its status, never poll.

Join the session's group first, then read the status: a change after the read is then sure
to arrive as an event, and one before it is already in the database. `settled_status` is how
synchronous code waits: with the embedded layer (every event of the process goes through it)
it listens on its own thread, without a hop to the loop and back; with another layer it waits
on the loop as `wait_settled` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from typing import Any

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.db.models import QuerySet

from horsie_site import compiled
from horsie_site.layers import EmbeddedChannelLayer
from sessions_app.events import events_layer, group_name
from sessions_app.models import Session

SETTLED = ("idle", "waiting")


def status_now(session_id: int) -> str:
    return str(status_of(session_id)[0][0])


@compiled.select(int)
def status_of(session_id: int) -> QuerySet[Session, tuple[str]]:
    return Session.objects.filter(pk=session_id).values_list("status")


async def wait_settled(session_id: int, seconds: float) -> str:
    layer = events_layer()
    assert layer is not None
    channel = await layer.new_channel()
    await layer.group_add(group_name(session_id), channel)
    try:
        status = await database_sync_to_async(status_now)(session_id)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                while status not in SETTLED:
                    message = await layer.receive(channel)
                    event = message.get("event", {})
                    if event.get("type") == "status":
                        status = event["status"]
        return status
    finally:
        await layer.group_discard(group_name(session_id), channel)


def settled_status(session_id: int, seconds: float) -> str:
    """`wait_settled` for synchronous code: the status once settled, or when `seconds` ran out."""
    layer = events_layer()
    if not isinstance(layer, EmbeddedChannelLayer):
        return async_to_sync(wait_settled)(session_id, seconds)
    heard: deque[str] = deque()
    settled = threading.Event()

    def listener(message: dict[str, Any]) -> None:
        event = message.get("event", {})
        if event.get("type") == "status":
            heard.append(event["status"])
            settled.set()

    stop = layer.listen(group_name(session_id), listener)
    try:
        status = status_now(session_id)
        deadline = time.monotonic() + seconds
        while status not in SETTLED:
            if not settled.wait(max(0.0, deadline - time.monotonic())):
                return status
            settled.clear()
            while heard:  # in the order they came, as `wait_settled` reads them
                status = heard.popleft()
                if status in SETTLED:
                    break
        return status
    finally:
        stop()
