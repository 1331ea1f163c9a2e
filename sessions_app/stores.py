"""The core's `TranscriptStore` on the ORM, held by the runner that owns the turn lease."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from django.utils import timezone

from harness.context_cache import entry_cache
from harness.memory import MemorySource
from harness.messages import EntryKind, LogEntry
from harness.ports import LeaseLost
from harness.runtime import SessionView, ViewReads, session_context
from harness.skills import SkillSource
from harness.state import SessionState
from horsie_site import wiring
from memory_app.stores import OrmMemorySource, spaces_now, spaces_selected
from sessions_app.journal import state_after, state_load
from sessions_app.leases import lease_renew, lease_seconds
from sessions_app.models import Entry, Session
from sessions_app.selectors import ROW_FIELDS, context_entries_now, row_entry
from sessions_app.services import entry_append, turn_boundary
from sessions_app.threads import db
from skills_app.stores import OrmSkillSource, skills_now

NOT_REACHED = object()  # no boundary reached ahead of `next_turn`


def log_entry(row: Entry) -> LogEntry:
    return LogEntry(
        seq=row.seq,
        kind=row.kind,  # type: ignore[arg-type]
        content=row.content,
        data=row.data,
        tokens=row.tokens,
        author=row.author.username if row.author_id and row.author else None,
    )


def search_now(session_id: int, query: str, limit: int) -> list[LogEntry]:
    rows = (
        Entry.objects.filter(session_id=session_id, content__icontains=query)
        .order_by("-seq")
        .values_list(*ROW_FIELDS)[:limit]
    )
    return [row_entry(row) for row in rows]


def read_now(session_id: int, seq: int) -> LogEntry | None:
    row = Entry.objects.filter(session_id=session_id, seq=seq).values_list(*ROW_FIELDS).first()
    return row_entry(row) if row else None


class OrmTranscriptStore:
    """The runner's store. A model call's view renews the lease only when less than two
    thirds of it are surely left (`held_until`, from the last renewal or from the lease the
    runner was handed): a lease cannot be taken over before it expires, and the heartbeat
    renews it every third of its life, so a renewal per call would only add a write."""

    def __init__(self, lease: str) -> None:
        self.lease = lease
        self.known: dict[int, SessionState] = {}  # the state last read, to read on from
        self.held_until = 0.0  # monotonic: the lease is surely this runner's until then
        self.ahead: dict[int, ViewReads] = {}  # the first call's view, read with the setup
        self.boundary: dict[int, str | None | Exception] = {}  # reached with the last entry

    async def context_entries(self, session_id: int) -> Sequence[LogEntry]:
        return await db(context_entries_now)(session_id)

    async def append(
        self,
        session_id: int,
        *,
        kind: EntryKind,
        content: str = "",
        data: Mapping[str, Any] | None = None,
        tokens: int | None = None,
    ) -> LogEntry:
        self.ahead.pop(session_id, None)
        return log_entry(await db(self.appended)(session_id, kind, content, data, tokens))

    def appended(
        self,
        session_id: int,
        kind: EntryKind,
        content: str,
        data: Mapping[str, Any] | None,
        tokens: int | None,
    ) -> Entry:
        return entry_append(
            session_id=session_id,
            kind=kind,
            content=content,
            data=data,
            tokens=tokens,
            lease=self.lease,
        )

    async def append_last(
        self,
        session_id: int,
        *,
        kind: EntryKind,
        content: str = "",
        data: Mapping[str, Any] | None = None,
        tokens: int | None = None,
    ) -> LogEntry:
        """`append`, then the turn boundary, on the same database trip. The entry stands
        whatever the boundary does: its outcome (or its failure) is what `next_turn` says."""
        self.ahead.pop(session_id, None)

        def appended_then_boundary() -> tuple[Entry, str | None | Exception]:
            row = self.appended(session_id, kind, content, data, tokens)
            try:
                return row, turn_boundary(session_id, self.lease)
            except Exception as error:  # raised by next_turn: the entry stands
                return row, error

        row, self.boundary[session_id] = await db(appended_then_boundary)()
        return log_entry(row)

    def read_ahead(self, session: Session) -> None:
        """On the setup's database trip, with the session row it read: whether the lease it
        was handed is still held (and until when), and the first call's view, so that call
        makes no trip of its own. Nothing but this runner appends meanwhile."""
        expires = session.lease_expires_at
        if session.lease_owner != self.lease or expires is None:
            raise LeaseLost(f"session {session.pk}: the lease {self.lease} is no longer held")
        self.held_until = time.monotonic() + (expires - timezone.now()).total_seconds()
        self.ahead[session.pk] = self.reads_now(session.pk, session, memory=True, skills=True)

    def reads_now(
        self, session_id: int, selected: Session | None, *, memory: bool, skills: bool
    ) -> ViewReads:
        reads = ViewReads(
            entries=context_entries_now(session_id),
            state=state_after(session_id, self.known.get(session_id)),
            memory=spaces_selected(selected.memory) if memory and selected else (),
            skills=skills_now(selected) if skills and selected else (),
        )
        self.known[session_id] = reads.state
        return reads

    async def view_reads(
        self,
        session_id: int,
        memory: MemorySource | None,
        skills: SkillSource | None,
        renew: bool = False,
    ) -> ViewReads | None:
        """The context, the state, and the ORM's memory and skills, in one database trip
        (with the lease's renewal first, when asked and due), or none when the setup read
        them; None when a source is not the ORM's (the caller then asks each)."""
        if not (memory is None or isinstance(memory, OrmMemorySource)) or not (
            skills is None or isinstance(skills, OrmSkillSource)
        ):
            return None
        ahead = self.ahead.pop(session_id, None)
        if ahead is not None and not (renew and self.renew_due()):
            return replace(
                ahead,
                memory=ahead.memory if memory is not None else (),
                skills=ahead.skills if skills is not None else (),
            )

        def read() -> ViewReads:
            if renew and self.renew_due():
                self.renewed(session_id)
            selected = None  # what the session selects, read once for memory and skills
            if memory is not None or skills is not None:
                selected = Session.objects.only("team_id", "memory", "skills", "bundles").get(
                    pk=session_id
                )
            return self.reads_now(
                session_id, selected, memory=memory is not None, skills=skills is not None
            )

        reads: ViewReads = await db(read)()
        return reads

    async def state(self, session_id: int) -> SessionState:
        state = await db(state_after)(session_id, self.known.get(session_id))
        self.known[session_id] = state
        return state

    async def search(self, session_id: int, query: str, limit: int) -> Sequence[LogEntry]:
        return await db(search_now)(session_id, query, limit)

    async def read(self, session_id: int, seq: int) -> LogEntry | None:
        return await db(read_now)(session_id, seq)

    async def next_turn(self, session_id: int) -> bool:
        self.ahead.pop(session_id, None)
        reached = self.boundary.pop(session_id, NOT_REACHED)
        if isinstance(reached, Exception):
            raise reached
        lease = (
            await db(turn_boundary)(session_id, self.lease) if reached is NOT_REACHED else reached
        )
        if lease is None:
            return False
        self.lease = lease
        return True

    async def keep_alive(self, session_id: int) -> None:
        await db(self.renewed)(session_id)

    def renewed(self, session_id: int) -> None:
        renewed_at = time.monotonic()
        if not lease_renew(session_id, self.lease):
            raise LeaseLost(f"session {session_id} was taken over by another runner")
        self.held_until = renewed_at + lease_seconds()

    def renew_due(self) -> bool:
        return self.held_until - time.monotonic() < lease_seconds() * 2 / 3


def session_view(session: Session, upto: int | None = None) -> SessionView:
    """The session as its next model call sees it (as it was at `upto`, when given): the one
    context builder, with the card's wire's counter and capabilities. The session's present
    reuses what its model calls (and earlier views) made of each entry in this process."""
    capabilities, counter = wiring.ruler_for(session.model)
    state, _ = state_load(session.pk, upto)
    return session_context(
        system_prompt=session.system_prompt,
        tools=[tool.spec for tool in wiring.tools_for(session).values()],
        capabilities=capabilities,
        entries=context_entries_now(session.pk, upto),
        state=state,
        counter=counter,
        policy=wiring.policy_for(session),
        memory=spaces_now(session.pk),
        skills=skills_now(session),
        cache=entry_cache(session.pk) if upto is None else None,
    )
