"""Live events: typed payloads, one channel-layer group per session, sent after commit.

Entries and status changes are sent only once their transaction commits, so a watcher never
sees something the database does not hold. Deltas are not stored and go out at once; the
reply text in flight is kept chunk by chunk in `streams` for watchers who join mid-reply.
"""

from __future__ import annotations

import secrets
from typing import Any, Literal, TypedDict

from channels.layers import get_channel_layer
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from sessions_app import outbox
from sessions_app.streams import STREAM_TTL, streams


class EntryEvent(TypedDict):
    type: Literal["entry"]
    entry: dict[str, Any]


class DeltaEvent(TypedDict):
    type: Literal["delta"]
    text: str
    offset: int
    stream: str


class StatusEvent(TypedDict):
    type: Literal["status"]
    status: str


class StateEvent(TypedDict):
    type: Literal["state"]
    state: dict[str, Any]


class CompactingEvent(TypedDict):
    type: Literal["compacting"]
    phase: Literal["start", "end"]
    since: str | None


Event = EntryEvent | DeltaEvent | StatusEvent | StateEvent | CompactingEvent


EVENTS = "events"  # the channel layer sessions' events go through (`settings.CHANNEL_LAYERS`)


def events_layer() -> Any:
    return get_channel_layer(EVENTS)


def group_name(session_id: int) -> str:
    return f"session.{session_id}"


def layer_message(event: Event) -> dict[str, Any]:
    return {"type": "session.event", "event": event}


def send_now(session_id: int, event: Event) -> None:
    """From sync code: at once, or with the batch of the outbox open on this thread."""
    outbox.post(lambda: send_async(session_id, event))


def send_on_commit(session_id: int, event: Event) -> None:
    transaction.on_commit(lambda: send_now(session_id, event))


async def send_async(session_id: int, event: Event) -> None:
    layer = events_layer()
    if layer is not None:
        await layer.group_send(group_name(session_id), layer_message(event))


async def stream_in_flight(session_id: int) -> dict[str, Any] | None:
    """The reply text streamed so far by the call in flight, if one is streaming."""
    flight = await streams().read(session_id)
    return {"stream": flight[0], "text": flight[1]} if flight else None


def stream_forget(session_id: int) -> None:
    """A dead runner's text in flight is no longer in flight; nor is its compaction."""
    streams().forget(session_id)
    cache.delete(compacting_key(session_id))


def compacting_key(session_id: int) -> str:
    return f"compacting:{session_id}"


def compacting_since(session_id: int) -> str | None:
    """When the compaction running now started (ISO 8601), for a page that opens mid-way."""
    value = cache.get(compacting_key(session_id))
    return value if isinstance(value, str) else None


class ChannelEvents:
    """The core's `EventSink` on the channel layer.

    Each delta carries its stream's id and its `offset` in the text, and its chunk is
    appended to the stream in flight (`streams`) *before* the delta is published. A watcher
    joins the group first, then reads the stream: every delta is either in what it read or
    arrives after, and the offsets let the browser drop the overlap, so the text in flight
    is neither cut nor doubled. The stream is gone before the reply's entry is appended.
    """

    def __init__(self) -> None:
        self.stream = ""
        self.length = 0

    async def stream_start(self, session_id: int) -> None:
        self.stream = secrets.token_hex(6)
        self.length = 0
        await streams().begin(session_id, self.stream)

    async def delta(self, session_id: int, text: str) -> None:
        offset = self.length
        self.length += len(text)
        await streams().append(session_id, self.stream, text)
        await send_async(
            session_id, {"type": "delta", "text": text, "offset": offset, "stream": self.stream}
        )

    async def stream_end(self, session_id: int) -> None:
        await streams().end(session_id, self.stream)
        self.length = 0

    async def compacting(self, session_id: int, phase: Literal["start", "end"]) -> None:
        """Compaction streams nothing: watchers see its start (with the time, so a page that
        opens mid-way shows how long it has run) and its end."""
        since: str | None = None
        if phase == "start":
            since = timezone.now().isoformat()
            cache.set(compacting_key(session_id), since, STREAM_TTL)
        else:
            cache.delete(compacting_key(session_id))
        await send_async(session_id, {"type": "compacting", "phase": phase, "since": since})
