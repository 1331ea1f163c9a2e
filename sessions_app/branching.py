"""New sessions from an old one: fork (`/summary-n-fork`), handoff, and rewind.

The original is only read, never written: not an entry, not a notice, not its
`updated_at`. A fork's whole history is one `fork` boundary whose summary the new session's
runner writes (from the original's context as it was at `parent_seq`) and whose carried
state is the original's durable state at that seq; a handoff is the same boundary with a
document a person wrote or edited, so no model call is needed. A rewind copies the
original's model-visible history up to an entry, so the agent can take another path.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from harness.compaction.boundary import Boundary
from harness.state import durable
from sessions_app.journal import state_load
from sessions_app.leases import lease_take
from sessions_app.models import Entry, Session
from sessions_app.selectors import context_rows, row_entry
from sessions_app.services import (
    SELECTION_FIELDS,
    InvalidInput,
    ServiceError,
    entry_append,
    input_check,
    message_post,
)

HANDOFF_MAX_CHARS = 200_000


def child_session(
    parent: Session, user: Any, *, title: str, parent_seq: int, branch: str
) -> Session:
    child = Session(
        team=parent.team,
        created_by=user,
        kind="fork",
        branch=branch,
        parent=parent,
        parent_seq=parent_seq,
        title=title[:200],
        model=parent.model,
        preset=parent.preset,
        system_prompt=parent.system_prompt,
        max_steps=parent.max_steps,
    )
    for name in SELECTION_FIELDS:
        setattr(child, name, getattr(parent, name))
    child.save()
    return child


def session_fork(*, parent: Session, user: Any, document: str | None = None) -> Session:
    """A new session whose history is one `fork` boundary. With `document` (an edited
    handoff) the boundary holds it; without, the new session's runner summarises."""
    upto = parent.last_seq
    title = f"{parent.title or f'Session {parent.pk}'} — {'handoff' if document else 'fork'}"
    if document is not None:
        input_check(document, "handoff document")
        with transaction.atomic():
            child = child_session(parent, user, title=title, parent_seq=upto, branch="handoff")
            fork_boundary_append(child, document.strip(), handoff=True, author=user)
        return child
    with transaction.atomic():
        child = child_session(parent, user, title=title, parent_seq=upto, branch="summary")
        lease = lease_take(child.pk)
        assert lease is not None, "a new session's lease is free"
        from sessions_app.dispatcher import turn_dispatch

        turn_dispatch(child.pk, lease)
    return child


def fork_boundary_append(
    child: Session,
    summary: str,
    *,
    handoff: bool = False,
    author: Any = None,
    extra: dict[str, Any] | None = None,
) -> Entry:
    parent_id, upto = child.parent_id, child.parent_seq
    assert parent_id is not None and upto is not None
    state, _ = state_load(parent_id, upto)
    extra = dict(extra or {})
    boundary = Boundary(
        summary=summary,
        first_kept_seq=2,
        carried=durable(state),
        trigger="fork",
        pinned=extra.pop("pinned", None),
        tokens_before=extra.pop("tokens_before", None),
        usage=extra.pop("usage", None),
        summariser=extra.pop("summariser", None),
        extra={"parent": parent_id, "parent_seq": upto, "handoff": handoff, **extra},
    )
    return entry_append(
        session_id=child.pk, kind="boundary", content=summary, data=boundary.to_data(),
        author=author,
    )  # fmt: skip


def session_rewind(*, parent: Session, user: Any, seq: int, text: str | None) -> Session:
    """A new session holding the original's model-visible history up to `seq` (and the
    results of calls made by then), then `text` as its first new message."""
    if not 1 <= seq <= parent.last_seq:
        raise InvalidInput(f"Session {parent.pk} has no entry {seq}.")
    if text is not None:
        input_check(text)
    rows = context_rows(parent.pk, upto=seq)
    answered = results_of_calls(parent.pk, rows, seq)
    rows.sort(key=lambda row: (row[1] != "boundary", row[0]))  # its boundary first
    with transaction.atomic():
        child = child_session(
            parent,
            user,
            title=f"{parent.title or f'Session {parent.pk}'} — rewind to {seq}",
            parent_seq=seq,
            branch="rewind",
        )
        for row_seq, kind, content, data, tokens in [*rows, *answered]:
            copied = {**data, "copied_from": [parent.pk, row_seq]}
            if kind == "boundary":
                copied.update(first_kept_seq=2, trigger="fork", parent=parent.pk, parent_seq=seq)
                copied.pop("cleared_before", None)
            entry_append(
                session_id=child.pk, kind=kind, content=content, data=copied, tokens=tokens
            )
    if text:
        message_post(session=child, user=user, text=text)
    return child


def results_of_calls(parent_id: int, rows: list[Any], seq: int) -> list[Any]:
    """The results, after `seq`, of tool calls made at or before it: a call is never copied
    without its result."""
    open_calls: set[str] = set()
    for _, kind, _, data, _ in rows:
        if kind == "assistant":
            open_calls = {c["id"] for c in data.get("tool_calls", ())}
        elif kind == "tool_result":
            open_calls.discard(str(data.get("call_id")))
    if not open_calls:
        return []
    later = (
        Entry.objects.filter(session_id=parent_id, seq__gt=seq, kind="tool_result")
        .order_by("seq")
        .values_list("seq", "kind", "content", "data", "tokens")[: len(open_calls) * 4]
    )
    return [row for row in later if str(row[3].get("call_id")) in open_calls]


def summary_edit(
    *, session: Session, user: Any, boundary_seq: int, summary: str, pin: bool = True
) -> Entry:
    """A person's edit of the latest summary: a new boundary (trigger `edit`, same cut).

    Pinned (the default), the edited text is kept verbatim by every later fold, which
    writes only the rest, until a person edits the summary again (and may unpin it)."""
    input_check(summary, "summary")
    with transaction.atomic():
        list(Session.objects.select_for_update().filter(pk=session.pk).values_list("pk"))
        latest = Entry.objects.filter(session=session, kind="boundary").order_by("-seq").first()
        if latest is None or latest.seq != boundary_seq:
            raise NotLatest(f"Entry {boundary_seq} is not the session's latest boundary.")
        edited = Boundary.from_entry(row_entry((latest.seq, "boundary", "", latest.data, None)))
        boundary = Boundary(
            summary=summary.strip(),
            first_kept_seq=edited.first_kept_seq,
            carried=edited.carried,
            trigger="edit",
            pinned=summary.strip() if pin else None,
            cleared_before=edited.cleared_before,
            previous_boundary=latest.seq,
            extra={**edited.extra, "edited_from": latest.seq},
        )
        return entry_append(
            session_id=session.pk, kind="boundary", content=boundary.summary,
            data=boundary.to_data(), author=user,
        )  # fmt: skip


class NotLatest(ServiceError):
    """An edit of a summary that a newer boundary has replaced."""

    status = 409
