"""Live events: typed payloads, one channel-layer group per session, sent after commit.

Entries and status changes are sent only once their transaction commits, so a watcher never
sees something the database does not hold. Deltas are not stored and go out at once.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction


class EntryEvent(TypedDict):
    type: Literal["entry"]
    entry: dict[str, Any]


class DeltaEvent(TypedDict):
    type: Literal["delta"]
    text: str


class StatusEvent(TypedDict):
    type: Literal["status"]
    status: str


Event = EntryEvent | DeltaEvent | StatusEvent


def group_name(session_id: int) -> str:
    return f"session.{session_id}"


def layer_message(event: Event) -> dict[str, Any]:
    return {"type": "session.event", "event": event}


def send_now(session_id: int, event: Event) -> None:
    layer = get_channel_layer()
    if layer is not None:
        async_to_sync(layer.group_send)(group_name(session_id), layer_message(event))


def send_on_commit(session_id: int, event: Event) -> None:
    transaction.on_commit(lambda: send_now(session_id, event))


async def send_async(session_id: int, event: Event) -> None:
    layer = get_channel_layer()
    if layer is not None:
        await layer.group_send(group_name(session_id), layer_message(event))


class ChannelEvents:
    """The core's `EventSink` on the channel layer."""

    async def delta(self, session_id: int, text: str) -> None:
        await send_async(session_id, {"type": "delta", "text": text})
