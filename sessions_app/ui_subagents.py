"""A running subagent's progress inline in its parent's transcript, live.

The parent's UI socket watches each child it shows as running: a channel of its own
(`new_channel`) joins the child's group, so the child's events are told apart from the
parent's without changing what the event bus sends. On the child's status changes and
replies the socket re-renders the child's progress line (its status and latest reply) inside
the parent's `spawn_subagent` result, out of band. Access to the parent is re-checked, as
for every event; a child is of the parent's team. Watches end with the socket, or when the
child is idle again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from channels.db import database_sync_to_async
from django.http import Http404
from django.template.loader import render_to_string

from sessions_app.events import group_name
from sessions_app.leases import status_of
from sessions_app.models import Entry, Session
from sessions_app.selectors import access_session
from sessions_app.views import DETAIL

REPLY_CHARS = 600


def progress_of(child: Session) -> dict[str, Any]:
    last = (
        Entry.objects.filter(session_id=child.pk, kind="assistant")
        .exclude(content="")
        .order_by("-seq")
        .values_list("content", flat=True)
        .first()
    )
    return {"id": child.pk, "status": status_of(child), "reply": (last or "")[:REPLY_CHARS]}


@database_sync_to_async
def progress_frame(user: Any, parent_id: int, child_id: int) -> tuple[str, str] | None:
    """The child's progress line, out of band, and its status; None: the parent is gone."""
    try:
        access_session(user, parent_id)
    except Http404:
        return None
    child = Session.objects.filter(pk=child_id, parent_id=parent_id, kind="subagent").first()
    if child is None:
        return "", "idle"
    progress = progress_of(child)
    frame = render_to_string(f"{DETAIL}#subagent-progress", {"progress": progress, "oob": True})
    return frame, progress["status"]


@database_sync_to_async
def children_running(parent_id: int) -> list[int]:
    children = Session.objects.filter(parent_id=parent_id, kind="subagent")
    return [child.pk for child in children if status_of(child) != "idle"]


def moves(event: dict[str, Any]) -> bool:
    """A child's status change or reply: its progress line changes."""
    entry = event.get("entry") or {}
    return event.get("type") == "status" or entry.get("kind") == "assistant"


class ChildWatches:
    """The children one parent socket watches, each on a channel of its own."""

    def __init__(
        self, layer: Any, user: Any, parent_id: int, send: Callable[[str], Awaitable[None]]
    ):
        self.layer = layer
        self.user = user
        self.parent_id = parent_id
        self.send = send
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.refused = False

    async def start_running(self) -> None:
        for child_id in await children_running(self.parent_id):
            await self.watch(child_id)

    async def watch(self, child_id: int) -> None:
        if child_id in self.tasks or self.layer is None:
            return
        channel = await self.layer.new_channel()
        await self.layer.group_add(group_name(child_id), channel)
        self.tasks[child_id] = asyncio.create_task(self.follow(child_id, channel))

    async def follow(self, child_id: int, channel: str) -> None:
        try:
            if not await self.show(child_id):
                return
            while True:
                event = (await self.layer.receive(channel)).get("event", {})
                if moves(event) and not await self.show(child_id):
                    return
        finally:
            await self.layer.group_discard(group_name(child_id), channel)

    async def show(self, child_id: int) -> bool:
        """Send the child's line; False when the watch is over (idle, or no access)."""
        shown = await progress_frame(self.user, self.parent_id, child_id)
        if shown is None:
            self.refused = True
            return False
        frame, status = shown
        if frame:
            await self.send(frame)
        return status != "idle"

    async def stop(self) -> None:
        for task in self.tasks.values():
            task.cancel()
        for task in self.tasks.values():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.tasks.clear()
