"""Subagents on the ORM: a child session per spawn, and its answer back to the parent.

`subagent_spawn` creates the child (kind `subagent`, `parent` set, the parent's team; the
type's model card or else the parent's, the type's system prompt, the type's tool names when
it lists any) with the task as its first input, stored before any work starts, then takes
its turn like any posted message: the dispatcher runs it on any worker, so children spawned
in one reply run at once, each under its own lease.

When a child's run ends, `subagent_report` queues its answer on the parent as a `subagent`
input, which enters the parent's log as a `subagent_result` entry at the parent's next turn
boundary and starts a parent turn (as a fired timer does). The answer is the child's final
reply; a child whose run ended in a provider error, at its step limit, or in a failure is
reported as failed, with the notice that said why, so the parent goes on. A child is not
offered `ask_user` (nobody watches it to answer), so it never ends waiting on a question.
A child that hangs is taken over through its lease like any session, and reports when that
run ends. A person who types into a child starts a run that reports again.
"""

from __future__ import annotations

import logging

from django.db import transaction

from sessions_app.models import Entry, QueuedInput, Session
from sessions_app.services import SELECTION_FIELDS, log_started_empty, turn_start
from sessions_app.threads import db
from skills_app.models import SubagentType
from skills_app.selectors import subagent_types_selected

log = logging.getLogger(__name__)
FAILED = ("provider_error", "max_steps", "turn_failed", "turn_interrupted")
NO_TOOLS_FOR_CHILDREN = ("ask_user",)


def subagent_depth(session_id: int) -> int:
    depth = 0
    row = Session.objects.values("kind", "parent_id").get(pk=session_id)
    while row["kind"] == "subagent" and row["parent_id"] is not None:
        depth += 1
        row = Session.objects.values("kind", "parent_id").get(pk=row["parent_id"])
    return depth


def subagent_spawn(*, parent_id: int, type_name: str, task: str) -> Session:
    parent = Session.objects.select_related("model").get(pk=parent_id)
    kind = next(t for t in subagent_types_selected(parent) if t.name == type_name)
    with transaction.atomic():
        child = child_of(parent, kind, task)
        QueuedInput.objects.create(session=child, text=task)
    turn_start(child.pk)
    return child


def child_of(parent: Session, kind: SubagentType, task: str) -> Session:
    child = Session(
        team_id=parent.team_id,
        created_by_id=parent.created_by_id,
        kind="subagent",
        parent=parent,
        parent_seq=parent.last_seq,
        title=f"{kind.name}: {' '.join(task.split())}"[:200],
        model=kind.model or parent.model,
        system_prompt=kind.system_prompt or parent.system_prompt,
        max_steps=parent.max_steps,
        subagent_type=kind.name,
        tools=[str(name) for name in kind.tools or []],
    )
    for name in SELECTION_FIELDS:
        setattr(child, name, getattr(parent, name))
    child.save()
    log_started_empty(child.pk)
    return child


def subagent_report(session_id: int) -> None:
    """Queue a child's answer on its parent and start the parent's turn (no-op otherwise)."""
    child = Session.objects.filter(pk=session_id, kind="subagent").first()
    if child is None or child.parent_id is None:
        return
    text, failed = outcome(session_id)
    QueuedInput.objects.create(
        session_id=child.parent_id,
        kind="subagent",
        text=text,
        data={"subagent": child.pk, "type": child.subagent_type, "failed": failed},
    )
    turn_start(child.parent_id)


def outcome(session_id: int) -> tuple[str, bool]:
    """The child's final reply, or a clear failure text; and whether it failed."""
    last = Entry.objects.filter(session_id=session_id).order_by("-seq").first()
    if last is None:
        return "The subagent stopped before doing anything.", True
    if last.kind == "notice" and last.data.get("code") in FAILED:
        return f"The subagent failed: {last.content}", True
    if last.kind == "assistant" and not last.data.get("tool_calls"):
        return last.content or "(The subagent replied with no text.)", False
    return f"The subagent stopped without a final answer (its log ends in {last.kind}).", True


class OrmSubagentLauncher:
    async def depth(self, session_id: int) -> int:
        depth: int = await db(subagent_depth)(session_id)
        return depth

    async def launch(self, session_id: int, *, type_name: str, task: str) -> int:
        child = await db(subagent_spawn)(parent_id=session_id, type_name=type_name, task=task)
        return int(child.pk)
