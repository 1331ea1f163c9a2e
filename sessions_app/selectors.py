"""Reads with access checks: one helper per object type, used by views, API and consumers.

Another team's object and a missing one look the same from outside: `Http404`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import IntegerField, Q, QuerySet, Subquery
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from django.http import Http404

from harness.kept import KeptBy
from harness.messages import LogEntry
from horsie_site import compiled
from sessions_app.models import AgentPreset, Entry, ModelCard, Session
from teams_app.models import Team
from teams_app.selectors import teams_of

FAILURES = (  # notice codes that mean the last turn did not get its answer
    "provider_error",
    "compaction_failed",
    "context_overflow",
    "turn_failed",
    "handoff_failed",
    "max_steps",
)
MODEL_VISIBLE = (
    "user",
    "command",
    "answer",
    "assistant",
    "tool_result",
    "subagent_result",
    "timer",
)


def _one(queryset: QuerySet[Any], pk: Any, what: str) -> Any:
    try:
        return queryset.get(pk=int(pk))
    except (ValueError, TypeError, queryset.model.DoesNotExist):
        raise Http404(f"No such {what}.") from None


def access_model_card(user: Any, pk: Any) -> ModelCard:
    return _one(ModelCard.objects.filter(team__in=teams_of(user)), pk, "model card")


def access_preset(user: Any, pk: Any) -> AgentPreset:
    return _one(AgentPreset.objects.filter(team__in=teams_of(user)), pk, "preset")


def access_session(user: Any, pk: Any) -> Session:
    """The session, with its card and team, when `user` is on its team; else 404. Every
    page, operation and socket that touches a session asks here first."""
    try:
        session_id = int(pk)
    except (ValueError, TypeError):
        raise Http404("No such session.") from None
    rows = visible_session(user.pk, session_id) if user.is_authenticated else []
    if len(rows) != 1:
        raise Http404("No such session.")
    return rows[0]


@compiled.select(int, int)
def visible_session(user_id: int, session_id: int) -> QuerySet[Session]:
    teams = Team.objects.filter(membership__user_id=user_id)
    return Session.objects.filter(team__in=teams, pk=session_id).select_related("model", "team")


def sessions_visible(user: Any, *, team: Any = None, q: str = "") -> QuerySet[Session]:
    queryset = Session.objects.filter(team__in=teams_of(user)).select_related(
        "model", "parent", "created_by"
    )
    if team is not None:
        queryset = queryset.filter(team=team)
    if q:
        queryset = queryset.filter(title__icontains=q)
    return queryset.order_by("-created_at", "-id")


def model_cards_visible(user: Any, *, team: Any = None) -> QuerySet[ModelCard]:
    queryset = ModelCard.objects.filter(team__in=teams_of(user))
    return queryset.filter(team=team) if team is not None else queryset


def presets_visible(user: Any) -> QuerySet[AgentPreset]:
    return AgentPreset.objects.filter(team__in=teams_of(user))


def cut_seq(session_id: int) -> int:
    """The latest boundary's `first_kept_seq`; 1 when the session has never compacted."""
    return cut_or_first(cut_query(session_id).first())


def cut_query(session_id: int) -> QuerySet[Entry, Any]:
    latest = Entry.objects.filter(session_id=session_id, kind="boundary").order_by("-seq")
    kept = Cast(KeyTextTransform("first_kept_seq", "data"), IntegerField())
    return latest.values_list(kept, flat=True)[:1]


def cut_or_first(cut: Any) -> int:
    return int(cut) if cut is not None else 1


def entries_page(
    session_id: int, *, after: int | None, before: int | None, limit: int
) -> tuple[list[Entry], bool]:
    """A page in ascending seq: the first `limit` after `after`, or else the last `limit`
    before `before`; `has_more` says whether more lie beyond the page in that direction."""
    queryset = with_cut(session_id)
    if after is not None:
        queryset = queryset.filter(seq__gt=after)
    if before is not None:
        queryset = queryset.filter(seq__lt=before)
    if before is not None and after is None:
        rows = list(queryset.order_by("-seq")[: limit + 1])
        return rows[:limit][::-1], len(rows) > limit
    rows = list(queryset.order_by("seq")[: limit + 1])
    return rows[:limit], len(rows) > limit


def with_cut(session_id: int) -> QuerySet[Entry]:
    """The session's entries with their authors, each with the latest cut (`cut`)."""
    queryset = Entry.objects.filter(session_id=session_id).select_related("author")
    return queryset.annotate(cut=Subquery(cut_query(session_id)))


NEW_PAGE = 500  # entries since a seq, at most, in one answer


def entries_since(session_id: int, after: int) -> tuple[list[Entry], bool]:
    """What a watcher or a waiting poster has not seen: `entries_page` after `after`, one
    page of `NEW_PAGE`, from a statement compiled once (it is read on every turn)."""
    rows = new_entries(session_id, after)
    return rows[:NEW_PAGE], len(rows) > NEW_PAGE


@compiled.select(int, int)
def new_entries(session_id: int, after: int) -> QuerySet[Entry]:
    return with_cut(session_id).filter(seq__gt=after).order_by("seq")[: NEW_PAGE + 1]


Row = tuple[int, str, str, dict[str, Any], int | None]
ROW_FIELDS = ("seq", "kind", "content", "data", "tokens")


def context_rows(session_id: int, upto: int | None = None) -> list[Row]:
    """What context assembly needs: the latest boundary, then the model-visible entries
    from its cut on (the log as it was at `upto`, when given). Two indexed queries, however
    long the log: this runs before every model call. Plain tuples, no author join.
    """
    if upto is None:  # the log's end, before every model call: statements compiled once
        boundaries = latest_boundary(session_id)
        boundary: Row | None = boundaries[0] if boundaries else None
        rows = visible_from(session_id, cut_of(boundary))
    else:
        log = Entry.objects.filter(session_id=session_id, seq__lte=upto)
        boundary = log.filter(kind="boundary").order_by("-seq").values_list(*ROW_FIELDS).first()
        visible = log.filter(seq__gte=cut_of(boundary), kind__in=MODEL_VISIBLE)
        rows = list(visible.order_by("seq").values_list(*ROW_FIELDS))
    if boundary is None:
        return rows
    after = [row for row in rows if row[0] > boundary[0]]
    return [row for row in rows if row[0] < boundary[0]] + [boundary] + after


def cut_of(boundary: Row | None) -> int:
    return int(boundary[3].get("first_kept_seq", 1)) if boundary else 1


@compiled.select(int)
def latest_boundary(session_id: int) -> QuerySet[Entry, Row]:
    latest = Entry.objects.filter(session_id=session_id, kind="boundary").order_by("-seq")
    return latest.values_list(*ROW_FIELDS)[:1]


@compiled.select(int, int)
def visible_from(session_id: int, cut: int) -> QuerySet[Entry, Row]:
    visible = Entry.objects.filter(session_id=session_id, seq__gte=cut, kind__in=MODEL_VISIBLE)
    return visible.order_by("seq").values_list(*ROW_FIELDS)


@compiled.select(int)
def last_mark(session_id: int) -> QuerySet[Entry, tuple[int, int, Any]]:
    """The last entry's seq, id and time: which log the kept context belongs to."""
    last = Entry.objects.filter(session_id=session_id).order_by("-seq")
    return last.values_list("seq", "id", "created_at")[:1]


def is_in_context(entry: Entry, cut: int) -> bool:
    return entry.seq >= cut and entry.kind in MODEL_VISIBLE


def row_entry(row: Row) -> LogEntry:
    seq, kind, content, data, tokens = row
    return LogEntry(seq=seq, kind=kind, content=content, data=data, tokens=tokens)  # type: ignore[arg-type]


def context_entries_now(session_id: int, upto: int | None = None) -> list[LogEntry]:
    """`context_rows` as entries. The context at the end of the log is read on from the last
    read of it in this process (`KeptContext`): one query for the entries since."""
    if upto is not None:
        return [row_entry(row) for row in context_rows(session_id, upto)]
    kept = kept_context(session_id)
    with kept.lock:
        return list(kept.read_on(session_id))


Mark = tuple[int, int, Any]  # an entry's seq, id and created_at: which log it belongs to
EMPTY_LOG: Mark = (0, 0, None)  # before the first entry of a log known to be empty


@dataclass
class KeptContext:
    """One session's context entries as last read, and the last entry read (of any kind).

    The log only grows, so the context at its end is the kept one plus the model-visible
    entries since, unless a boundary came: then it is read whole again. The last entry is
    read again with the new ones and must be the very row kept (id and time, not just seq):
    a session id reused in another database, or after a test's rollback, starts afresh.
    A session made in this process starts `empty`: its first read is then one query from
    seq 1, the whole log, right whichever log it turns out to be.
    """

    entries: list[LogEntry] = field(default_factory=list)
    last: Mark | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def empty(self) -> None:
        with self.lock:
            self.entries, self.last = [], EMPTY_LOG

    def read_on(self, session_id: int) -> list[LogEntry]:
        if self.last is not None:
            seq, pk, created = self.last
            rows = context_tail(session_id, seq)
            after = rows if seq == 0 else rows[1:]
            same_log = seq == 0 or (
                bool(rows) and rows[0][0] == seq and rows[0][5:] == (pk, created)
            )
            if same_log and not any(row[1] == "boundary" for row in after):
                if after:
                    new = [row_entry(row[:5]) for row in after if row[1] in MODEL_VISIBLE]
                    self.entries = self.entries + new
                    self.last = after[-1][0], after[-1][5], after[-1][6]
                return self.entries
        marks = last_mark(session_id)
        mark = marks[0] if marks else None
        self.entries = [row_entry(row) for row in context_rows(session_id)]
        # Read after the mark: an entry appended in between is read again next time (the
        # kept entries may already hold it, so the next read compares, never duplicates).
        self.last = mark
        if mark is not None:
            self.entries = [e for e in self.entries if e.seq <= mark[0]]
        return self.entries


@compiled.select(int, int)
def context_tail(session_id: int, seq: int) -> QuerySet[Entry, tuple[Any, ...]]:
    """The entries from `seq` on, as the kept context reads on."""
    rows = Entry.objects.filter(session_id=session_id, seq__gte=seq).order_by("seq")
    return rows.values_list(*ROW_FIELDS, "id", "created_at")


_KEPT: KeptBy[KeptContext] = KeptBy(KeptContext)


def kept_context(session_id: int) -> KeptContext:
    """The session's kept context in this database; the least recently used one is dropped."""
    return _KEPT.get((str(connection.settings_dict["NAME"]), session_id))


def last_error(session_id: int) -> dict[str, Any] | None:
    """The failure the last turn ended in, until a reply clears it: `{code, text, seq}`."""
    latest = (
        Entry.objects.filter(session_id=session_id)
        .filter(Q(kind="assistant") | Q(kind="notice", data__code__in=FAILURES))
        .order_by("-seq")
        .values_list("seq", "kind", "content", "data__code")
        .first()
    )
    if latest is None or latest[1] == "assistant":
        return None
    seq, _, text, code = latest
    return {"code": code, "text": text[:1000], "seq": seq}
