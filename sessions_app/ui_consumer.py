"""The session page's live stream: the same events as the JSON socket, as HTML.

`/ws/v1/sessions/{id}/ui/?after=SEQ` is what the page's htmx `ws` extension opens. Every
frame is a set of `hx-swap-oob` fragments rendered from the partials the page itself is
made of (entries, the status badge, the state panel's lists, the meter, the failure banner,
the memory panel, the chart, the compaction indicator), so the page and a live update never
render anything two ways. Only reply deltas stay JSON: the page appends their text by offset.

It follows the JSON consumer's rules (join the group, then catch up from `after`, every
entry exactly once by seq; refused sockets are accepted, then closed 4401/4404), and
re-checks access on every event it renders through `access_session`, in the same thread hop
as the render; deltas are re-checked at most once a second.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from django.http import Http404
from django.template.loader import render_to_string

from memory_app import panels as memory_panels
from sessions_app import stores, usage
from sessions_app.api import session_json
from sessions_app.consumers import SessionConsumer
from sessions_app.events import compacting_since
from sessions_app.journal import state_json, state_load
from sessions_app.leases import status_of
from sessions_app.models import Session
from sessions_app.selectors import access_session, entries_page
from sessions_app.ui_subagents import ChildWatches
from sessions_app.views import DETAIL, chart_of, failure_of, shown, transcript_marks
from teams_app.websocket import CLOSE_NOT_FOUND

CATCH_UP_PAGE = 200  # rendered entries a frame (the JSON socket sends rows: NEW_PAGE a page)
# Entries after which the meter, the failure banner, the memory panel and the chart change.
MOVES_METER = ("assistant", "boundary", "notice")


@dataclass
class Viewer:
    """What one socket has shown: the frames it renders depend on it."""

    user: Any
    session_id: int
    csrf_token: str
    last_seq: int = 0
    state_seq: int = -1
    stream: str = ""
    status: str = ""


def partial(name: str, viewer: Viewer, session: Session, **context: Any) -> str:
    base = {"session": session, "user": viewer.user, "csrf_token": viewer.csrf_token, "oob": True}
    return render_to_string(f"{DETAIL}#{name}", {**base, **context})


def panels(viewer: Viewer, session: Session) -> str:
    view = stores.session_view(session)
    detail = session_json(session, view)
    return partial(
        "live-panels",
        viewer,
        session,
        context=detail["context"],
        usage=detail["usage"],
        usage_total=usage.overall(detail["usage"]),
        failure=failure_of(session, detail["last_error"]),
        memory=memory_panels.session_panel(session, view.memory, viewer.user),
        chart=chart_of(session, detail["context"]),
    )


def entries_frame(viewer: Viewer, session: Session, after: int, limit: int) -> tuple[str, bool]:
    """Entries after `after` appended to the transcript; a boundary also moves the cut."""
    rows, more = entries_page(session.pk, after=after, before=None, limit=limit)
    rows = [row for row in rows if row.seq > viewer.last_seq]
    if not rows:
        return "", more
    marks = transcript_marks(session.pk)
    entries = shown(session.pk, rows, marks)
    viewer.last_seq = entries[-1]["seq"]
    body = "".join(partial("entry", viewer, session, entry=entry, failed=None) for entry in entries)
    frame = f'<div id="entries" hx-swap-oob="beforeend">{body}</div>'
    kinds = {entry["kind"] for entry in entries}
    if "boundary" in kinds:
        frame += partial("view-note", viewer, session, marks=marks)
    if "assistant" in kinds:
        frame += stream_ended(viewer, session, every=False)
    if kinds & set(MOVES_METER):
        frame += panels(viewer, session)
    return frame, more


def stream_ended(viewer: Viewer, session: Session, *, every: bool) -> str:
    """The reply's bubble is emptied and hidden in the frame that brings its entry, so the
    final form takes its place; `every`: no reply is streaming any more (not running)."""
    return partial("stream-ended", viewer, session, ended=viewer.stream, all=every)


def status_frame(viewer: Viewer, session: Session, status: str, *, live: bool) -> str:
    changed = status != viewer.status
    viewer.status = status
    frame = partial("status-badge", viewer, session, status=status)
    if status != "running":
        frame += stream_ended(viewer, session, every=True)
        if status == "idle":
            frame += partial("compacting", viewer, session, compacting_since=None)
        if live and changed:
            frame += panels(viewer, session)
    return frame


def state_frame(viewer: Viewer, session: Session, state: dict[str, Any]) -> str:
    if state.get("seq", 0) < viewer.state_seq:
        return ""
    viewer.state_seq = state.get("seq", 0)
    return partial("state-lists", viewer, session, state=state)


@database_sync_to_async
def render(viewer: Viewer, event: dict[str, Any]) -> str | None:
    """The frame for one event, or None when the viewer may no longer watch the session."""
    try:
        session = access_session(viewer.user, viewer.session_id)
    except Http404:
        return None
    kind = event["type"]
    if kind == "entry":
        missing = event["entry"]["seq"] - viewer.last_seq  # more than 1: a gap, filled here
        if missing <= 0:
            return ""
        return entries_frame(viewer, session, viewer.last_seq, min(missing, CATCH_UP_PAGE))[0]
    if kind == "status":
        return status_frame(viewer, session, event["status"], live=True)
    if kind == "state":
        return state_frame(viewer, session, event["state"])
    if kind == "compacting":
        since = event.get("since") if event.get("phase") == "start" else None
        frame = partial("compacting", viewer, session, compacting_since=since)
        return frame + (panels(viewer, session) if since is None else "")
    return ""


@database_sync_to_async
def opening(viewer: Viewer, *, page: int = CATCH_UP_PAGE) -> list[str] | None:
    """What a (re)connecting page lacks: the entries after its last, then status and state."""
    try:
        session = access_session(viewer.user, viewer.session_id)
    except Http404:
        return None
    frames, more, caught_up = [], True, False
    while more:
        frame, more = entries_frame(viewer, session, viewer.last_seq, page)
        if frame:
            frames.append(frame)
            caught_up = True
    status = status_of(session)
    frames.append(status_frame(viewer, session, status, live=False))
    frames.append(state_frame(viewer, session, state_json(*state_load(session.pk))))
    since = compacting_since(session.pk)
    if since:
        frames.append(partial("compacting", viewer, session, compacting_since=since))
    if caught_up:
        frames.append(panels(viewer, session))
    return frames


def spawned(event: dict[str, Any]) -> int | None:
    """The child a `spawn_subagent` result started, to follow inline."""
    entry = event.get("entry") if event["type"] == "entry" else None
    data = (entry or {}).get("data") or {}
    if entry is None or entry["kind"] != "tool_result" or data.get("name") != "spawn_subagent":
        return None
    child = (data.get("subagent") or {}).get("id")
    return child if isinstance(child, int) else None


class SessionUIConsumer(SessionConsumer):
    """The JSON consumer's connection rules, speaking rendered HTML fragments."""

    refused = False

    async def catch_up(self) -> None:
        cookies = self.scope.get("cookies") or {}
        self.viewer = Viewer(
            user=self.user,
            session_id=self.session_id,
            csrf_token=str(cookies.get("csrftoken", "")),
            last_seq=self.last_seq,
        )
        frames = await opening(self.viewer)
        if frames is None:
            self.refused = True
            await self.close(code=CLOSE_NOT_FOUND)
            return
        for frame in frames:
            if frame:
                await self.send(text_data=frame)
        self.children = ChildWatches(self.channel_layer, self.user, self.session_id, self.frame)
        await self.children.start_running()

    async def frame(self, text: str) -> None:
        await self.send(text_data=text)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "children"):
            await self.children.stop()
        await super().disconnect(code)

    async def send_json(self, content: Any, close: bool = False) -> None:
        """The base's opening status and state are in the catch-up already; deltas, pongs
        and errors go out as JSON."""
        if self.refused or (
            isinstance(content, dict) and content.get("type") in ("status", "state")
        ):
            return
        if isinstance(content, dict) and content.get("type") == "delta":
            self.viewer.stream = str(content.get("stream", ""))
        await super().send_json(content, close=close)

    async def session_event(self, message: dict[str, Any]) -> None:
        event = message["event"]
        if event["type"] == "delta":
            if not await self.still_allowed("delta"):
                await self.close(code=CLOSE_NOT_FOUND)
                return
            self.viewer.stream = event["stream"]
            await self.send(text_data=json.dumps(event))
            return
        frame = await render(self.viewer, event)
        if frame is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        if frame:
            await self.send(text_data=frame)
        child = spawned(event)
        if child is not None and hasattr(self, "children"):
            await self.children.watch(child)
