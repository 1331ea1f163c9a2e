"""Each log entry as the model is shown it, kept from call to call of one session.

Entries never change once written, so what `harness.context` makes of one (its message, the
head-and-tail form when too large, its text, estimate and token count) is kept by its seq and
made again only when what decides it changes: the entry itself (checked on every hit, so a
seq that names another entry, in another database, is never confused with it), whether a
boundary cleared it, the size limits, the token count it was fitted on, and the counter. A kept
message is the same object on every call, which lets a wire keep its encoding too
(`harness.providers.encoding.Pieces`). Only the entries of the latest call are kept, and only
for the sessions used last, so memory follows the recent contexts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from harness.kept import KeptBy
from harness.messages import LogEntry, Message, SystemMessage, UserMessage
from harness.tokens import TokenCounter

SESSIONS_KEPT = 64
Fixed = TypeVar("Fixed", SystemMessage, UserMessage)


@dataclass(frozen=True, slots=True)
class Form:
    """An entry's message under one view, and the figures of its block."""

    key: Hashable
    message: Message | None
    shortened: bool = False


@dataclass(frozen=True, slots=True)
class Count:
    """The block of `message` as `counter` counted it."""

    message: Message
    counter: TokenCounter
    block: Any  # harness.context.Block


@dataclass(slots=True)
class Kept:
    kind: str
    content: str
    data: Mapping[str, Any]
    base: Message | None
    form: Form | None = None
    count: Count | None = None

    def holds(self, entry: LogEntry) -> bool:
        return (
            self.kind == entry.kind
            and self.content == entry.content
            and (self.data is entry.data or self.data == entry.data)
        )


@dataclass
class EntryCache:
    """One session's kept entries; `fixed` keeps the messages that are not entries (the
    system message, the boundary's blocks) by their text, so they stay the same object too."""

    kept: dict[int, Kept] = field(default_factory=dict)
    fixed: dict[tuple[str, str], Message] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)  # one assembly at a time
    run: Any = None  # harness.context.Run: the latest call's entries as made, to go on from

    def entry(self, entry: LogEntry, base: Callable[[LogEntry], Message | None]) -> Kept:
        kept = self.kept.get(entry.seq)
        if kept is None or not kept.holds(entry):
            kept = Kept(kind=entry.kind, content=entry.content, data=entry.data, base=base(entry))
            self.kept[entry.seq] = kept
        return kept

    def message(self, message: Fixed) -> Fixed:
        key = (message.kind, message.text)
        return self.fixed.setdefault(key, message)  # type: ignore[return-value]  # same kind

    def keep_only(self, entries: Collection[LogEntry], fixed: Collection[Message]) -> None:
        """Forget what the latest call did not use (its `entries`, and the `fixed` messages
        it sent), once much of what is kept is stale."""
        if len(self.kept) > 2 * len(entries) + 64:
            seqs = {entry.seq for entry in entries}
            self.kept = {seq: kept for seq, kept in self.kept.items() if seq in seqs}
        if len(self.fixed) > 2 * len(fixed) + 8:
            keys = {(message.kind, message.text) for message in fixed}
            self.fixed = {key: m for key, m in self.fixed.items() if key in keys}


_SESSIONS: KeptBy[EntryCache] = KeptBy(EntryCache, SESSIONS_KEPT)


def entry_cache(session_id: int) -> EntryCache:
    """The session's cache; the least recently used session's is dropped past the limit."""
    return _SESSIONS.get(session_id)
