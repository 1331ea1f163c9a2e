"""The live websocket of a session: catch-up from `?after=SEQ`, then live events.

The consumer joins the session's group before reading the catch-up, so an entry committed
after that read arrives as an event; entries it already sent are skipped by seq, so a
watcher sees every entry exactly once. After the catch-up come the status, the state, and
the reply text already streamed by a call in flight (deltas carry offsets, so the browser
joins that text with the live deltas without doubling any of it). A socket that may not
watch is accepted and then closed: 4401 for no or a bad token, 4404 for a session that is
missing or another team's. Access is checked on connect and again before events, at most
once a second and shared by the process's sockets (`watching`), so a user removed from the
team stops seeing the session. Inbound frames are validated: only `ping` is understood.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from horsie_site.inputs import SEQ_MAX, bounded_int
from sessions_app.events import EVENTS, group_name, stream_in_flight
from sessions_app.journal import state_json, state_load
from sessions_app.schemas import entries_since_out
from sessions_app.watching import may_watch, still_allowed
from teams_app.websocket import CLOSE_NOT_FOUND, CLOSE_UNAUTHORIZED


def query_int(scope: dict[str, Any], name: str) -> int | None:
    values = parse_qs(scope.get("query_string", b"").decode("latin1")).get(name)
    return bounded_int(values[0], high=SEQ_MAX) if values else None


@database_sync_to_async
def catch_up_page(session_id: int, after: int) -> tuple[list[dict[str, Any]], bool]:
    return entries_since_out(session_id, after)


@database_sync_to_async
def current_state(session_id: int) -> dict[str, Any]:
    return state_json(*state_load(session_id))


class SessionConsumer(AsyncJsonWebsocketConsumer):
    channel_layer_alias = EVENTS

    async def connect(self) -> None:
        self.session_id = int(self.scope["url_route"]["kwargs"]["session_id"])
        self.user = self.scope.get("user")
        if not getattr(self.user, "is_authenticated", False):
            await self.refuse(CLOSE_UNAUTHORIZED)
            return
        status = await may_watch(self.user, self.session_id)
        if status is None:
            await self.refuse(CLOSE_NOT_FOUND)
            return
        self.group = group_name(self.session_id)
        self.last_seq = max(0, query_int(self.scope, "after") or 0)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.catch_up()
        await self.send_json({"type": "status", "status": status})
        await self.send_json({"type": "state", "state": await current_state(self.session_id)})
        if status == "running":
            await self.send_stream_in_flight()

    async def refuse(self, code: int) -> None:
        """Accepted, then closed: the client reads why from the close code."""
        await self.accept()
        await self.close(code=code)

    async def send_stream_in_flight(self) -> None:
        """The reply text streamed before this socket joined, as one delta at offset 0."""
        flight = await stream_in_flight(self.session_id)
        if flight and flight.get("text"):
            await self.send_json(
                {"type": "delta", "text": flight["text"], "offset": 0, "stream": flight["stream"]}
            )

    async def catch_up(self) -> None:
        more = True
        while more:
            entries, more = await catch_up_page(self.session_id, self.last_seq)
            for entry in entries:
                await self.send_entry(entry)

    async def send_entry(self, entry: dict[str, Any]) -> None:
        if entry["seq"] <= self.last_seq:
            return
        self.last_seq = entry["seq"]
        await self.send_json({"type": "entry", "entry": entry})

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def session_event(self, message: dict[str, Any]) -> None:
        event = message["event"]
        if not await self.still_allowed(event["type"]):
            await self.close(code=CLOSE_NOT_FOUND)
            return
        if event["type"] == "entry":
            await self.send_entry(event["entry"])
        else:
            await self.send_json(event)

    async def still_allowed(self, kind: str) -> bool:
        """Whether this socket's user may still watch: for every kind of event alike, by an
        answer at most `watching.RECHECK_SECONDS` old, shared with the process's sockets."""
        return await still_allowed(self.user, self.session_id)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong"})
            return
        await self.send_json({"type": "error", "detail": 'Only {"type": "ping"} is accepted.'})

    @classmethod
    async def decode_json(cls, text_data: str) -> Any:
        try:
            return await super().decode_json(text_data)
        except ValueError:
            return None
