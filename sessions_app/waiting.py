"""Waiting for a session to settle, for `?wait=`: listen for its status, never poll.

Join the session's group first, then read the status: a change after the read is then sure
to arrive as an event, and one before it is already in the database.
"""

from __future__ import annotations

import asyncio
import contextlib

from channels.db import database_sync_to_async
from django.db.models import QuerySet

from horsie_site import compiled
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
