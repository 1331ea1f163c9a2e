"""The interfaces the core needs from the outside world, and nothing more.

The turn loop reads and appends log entries through `TranscriptStore` and publishes what
streams through `EventSink`. The Django apps implement both on the ORM and the channel
layer; tests use the in-memory versions in `harness.testing`. Every method is async so the
loop never blocks on I/O, whatever is behind it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from harness.messages import EntryKind, LogEntry
from harness.state import SessionState


class TranscriptStore(Protocol):
    async def context_entries(self, session_id: int) -> Sequence[LogEntry]:
        """The log from the latest boundary's cut to the end, in seq order."""
        ...

    async def append(
        self,
        session_id: int,
        *,
        kind: EntryKind,
        content: str = "",
        data: Mapping[str, Any] | None = None,
        tokens: int | None = None,
    ) -> LogEntry:
        """Append one entry; the store assigns its seq. Entries are never changed afterwards."""
        ...

    async def state(self, session_id: int) -> SessionState:
        """The durable state as of the end of the log (newest snapshot plus what follows)."""
        ...

    async def search(self, session_id: int, query: str, limit: int) -> Sequence[LogEntry]:
        """Entries anywhere in the log whose text holds `query` (case-insensitive), newest first."""
        ...

    async def read(self, session_id: int, seq: int) -> LogEntry | None:
        """One entry, whole, wherever it is in the log."""
        ...

    async def next_turn(self, session_id: int) -> bool:
        """At a turn boundary: move queued inputs into the log and say whether to run again.

        Returning False means the session is released (idle) and the driver must stop.
        """
        ...

    async def keep_alive(self, session_id: int) -> None:
        """Renew the turn lease; raises `LeaseLost` when another runner has taken it."""
        ...


@runtime_checkable
class AppendsLast(Protocol):
    """A store that appends a turn's last entry (a reply that calls no tool) and reaches the
    turn boundary in the same trip (the ORM's: one hop to a database thread, not two); the
    `next_turn` that follows answers from what that trip found."""

    async def append_last(
        self,
        session_id: int,
        *,
        kind: EntryKind,
        content: str = "",
        data: Mapping[str, Any] | None = None,
        tokens: int | None = None,
    ) -> LogEntry: ...


class LeaseLost(Exception):
    """The turn lease expired and another runner took the session over."""


class EventSink(Protocol):
    async def stream_start(self, session_id: int) -> None:
        """A model call starts streaming: the text in flight starts empty."""
        ...

    async def delta(self, session_id: int, text: str) -> None:
        """A piece of reply text as it streams in."""
        ...

    async def stream_end(self, session_id: int) -> None:
        """The call's stream is over (its entry is about to be appended, or it failed)."""
        ...

    async def compacting(self, session_id: int, phase: Literal["start", "end"]) -> None:
        """A compaction starts or ends (it is no stream: watchers show its progress)."""
        ...
