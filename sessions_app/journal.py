"""The journal: the log read as events, folded into state, with snapshots and projections.

`state_load` is how every reader gets a session's durable state: the newest snapshot plus
the entries after it, so it costs the same at entry 100 as at entry 100,000. A snapshot is
written every `SNAPSHOT_EVERY` entries and at each boundary, inside the transaction that
appends the entry. `journal_apply` keeps the scheduler's `ArmedTimer` index in step with the
log and tells watchers when the state changed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import QuerySet

from harness.kept import KeptBy
from harness.messages import LogEntry
from harness.state import VERSION as STATE_VERSION
from harness.state import SessionState, changes_state, deserialise, durable, fold, serialise
from horsie_site import compiled
from sessions_app import events
from sessions_app.models import ArmedTimer, Entry, QueuedInput, Snapshot


def snapshot_every() -> int:
    return int(settings.HORSIE["SNAPSHOT_EVERY"])


def state_load(session_id: int, upto: int | None = None) -> tuple[SessionState, int | None]:
    """The state at the end of the log (or at `upto`), and the seq of the snapshot it
    started from."""
    snapshots = Snapshot.objects.filter(session_id=session_id)
    entries_after = Entry.objects.filter(session_id=session_id)
    if upto is not None:
        snapshots = snapshots.filter(seq__lte=upto)
        entries_after = entries_after.filter(seq__lte=upto)
    snapshot = snapshots.order_by("-seq").values_list("seq", "data").first()
    base = deserialise(snapshot[1]) if snapshot else None
    after = snapshot[0] if snapshot else 0
    rows = entries_after.filter(seq__gt=after).order_by("seq").values_list("seq", "kind", "data")
    # A plain read, not `.iterator()`: at most a snapshot interval of rows, and on PostgreSQL
    # a server-side cursor would cost three round trips for what one query returns.
    entries = (LogEntry(seq=seq, kind=kind, data=data) for seq, kind, data in rows)
    return fold(entries, base), (snapshot[0] if snapshot else None)


@dataclass
class KeptState:
    """A session's state as last read in this process, and which entry it ends at (its id and
    time, so that a session id reused in another database, or after a rollback, starts
    afresh, as `sessions_app.selectors.KeptContext` does for the context)."""

    state: SessionState | None = None
    mark: tuple[Any, ...] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


_KEPT: KeptBy[KeptState] = KeptBy(KeptState)


def state_now(session_id: int) -> SessionState:
    """`state_load`'s state at the end of the log, read on from the last read in this process:
    one query and the entries since, where a whole read folds up to a snapshot interval."""
    kept = _KEPT.get((str(connection.settings_dict["NAME"]), session_id))
    with kept.lock:
        if kept.state is not None:
            start = kept.state.seq
            rows = state_tail(session_id, start)
            after = rows if start == 0 else rows[1:]
            if start == 0 or (rows and rows[0][0] == start and rows[0][3:] == kept.mark):
                new = (LogEntry(seq=seq, kind=kind, data=data) for seq, kind, data, *_ in after)
                kept.state = fold(new, kept.state)
                kept.mark = after[-1][3:] if after else kept.mark
                return kept.state
        snapshots = latest_snapshot(session_id)
        base = deserialise(snapshots[0][1]) if snapshots else None
        rows = state_tail(session_id, snapshots[0][0] + 1 if snapshots else 1)
        state = fold(
            (LogEntry(seq=seq, kind=kind, data=data) for seq, kind, data, *_ in rows), base
        )
        mark = rows[-1][3:] if rows else None
        if mark is None and state.seq:  # nothing after the snapshot: its own entry marks it
            end = Entry.objects.filter(session_id=session_id, seq=state.seq)
            mark = end.values_list("id", "created_at").first()
        kept.state, kept.mark = (state, tuple(mark)) if mark else (None, None)
        return state


def state_empty(session_id: int) -> None:
    """A session made in this process starts with the empty state, at seq 0: its first
    `state_now` is then one query from seq 1, right whichever log it turns out to be."""
    kept = _KEPT.get((str(connection.settings_dict["NAME"]), session_id))
    with kept.lock:
        kept.state, kept.mark = SessionState(), None


@compiled.select(int)
def latest_snapshot(session_id: int) -> QuerySet[Snapshot, tuple[int, Any]]:
    snapshots = Snapshot.objects.filter(session_id=session_id).order_by("-seq")
    return snapshots.values_list("seq", "data")[:1]


def state_after(session_id: int, known: SessionState | None) -> SessionState:
    """The state at the end of the log, from `known` (the state at an earlier seq) and the
    entries after it. The log only grows and entries never change, so this is exactly
    `state_load`'s answer, for the cost of the entries since `known` (usually none or two).
    """
    if known is None:
        return state_now(session_id)
    entries = state_tail(session_id, known.seq + 1)
    return fold((LogEntry(seq=seq, kind=kind, data=data) for seq, kind, data, *_ in entries), known)


@compiled.select(int, int)
def state_tail(session_id: int, seq: int) -> QuerySet[Entry, tuple[Any, ...]]:
    """The entries from `seq` on, as the state reads on: what folding needs, and which row."""
    rows = Entry.objects.filter(session_id=session_id, seq__gte=seq).order_by("seq")
    return rows.values_list("seq", "kind", "data", "id", "created_at")


def state_json(state: SessionState, snapshot_seq: int | None) -> dict[str, Any]:
    """`GET /state` and the websocket's `state` event."""
    return {
        **durable(state),
        "pending_compact": dict(state.pending_compact) if state.pending_compact else None,
        "pending_handoff": state.pending_handoff,
        "seq": state.seq,
        "snapshot_seq": snapshot_seq,
    }


def snapshot_write(session_id: int) -> Snapshot:
    state, _ = state_load(session_id)
    snapshot, _ = Snapshot.objects.get_or_create(
        session_id=session_id,
        seq=state.seq,
        defaults={"version": STATE_VERSION, "data": serialise(state)},
    )
    return snapshot


def journal_apply(entry: Entry) -> None:
    """After an entry is inserted, in its transaction: snapshot, timer index, state event."""
    item = LogEntry(seq=entry.seq, kind=entry.kind, data=entry.data)  # type: ignore[arg-type]
    if entry.kind == "tool_result" and not entry.data.get("is_error"):
        timers_follow(entry)
    elif entry.kind == "boundary" and entry.data.get("trigger") == "fork":
        timers_rearm(entry)
    if entry.kind == "boundary" or entry.seq % snapshot_every() == 0:
        snapshot_write(entry.session_id)
    if changes_state(item):
        state, snapshot_seq = state_load(entry.session_id)
        events.send_on_commit(
            entry.session_id, {"type": "state", "state": state_json(state, snapshot_seq)}
        )


def timers_follow(entry: Entry) -> None:
    name = entry.data.get("name")
    if name == "set_timer":
        timer = entry.data["timer"]
        ArmedTimer.objects.create(
            session_id=entry.session_id,
            timer_id=timer["id"],
            message=timer["message"],
            due_at=datetime.fromisoformat(timer["due_at"]),
        )
    elif name == "cancel_timer":
        timer_id = entry.data["timer_id"]
        ArmedTimer.objects.filter(session_id=entry.session_id, timer_id=timer_id).delete()
        # Fired a moment ago but not yet in the log: cancelling still wins.
        QueuedInput.objects.filter(
            session_id=entry.session_id, kind="timer", data__timer=timer_id
        ).delete()


def timers_rearm(entry: Entry) -> None:
    """A fork's first entry carries armed timers: they are armed in the new session too."""
    for timer in entry.data.get("carried", {}).get("timers", []):
        ArmedTimer.objects.get_or_create(
            session_id=entry.session_id,
            timer_id=timer["id"],
            defaults={
                "message": timer["message"],
                "due_at": datetime.fromisoformat(timer["due_at"]),
            },
        )
