"""The boundary entry's data, built in one place.

A boundary is the log's record of a compaction (or of a fork's, an edit's or a clearing's
new starting point). `Boundary` is its one shape: every writer builds one and stores
`to_data()`; every reader that needs more than a field or two uses `from_entry`.

Triggers: `auto` (the prompt reached the trigger, or the provider said it overflowed),
`manual` (`/compact`), `fork` (a new session's first entry: a fork, a handoff or a rewind),
`edit` (a person's edit of the summary), `clear` (old tool outputs replaced by stubs, the
summary and cut unchanged). `reason` says why in more detail: `auto`, `manual`, `overflow`
(the provider refused the prompt as too long), `fallback` (a clearing because the summary
call failed). `pinned` is a person's summary text, kept verbatim by every later fold until a
person edits it again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from harness.messages import LogEntry

Trigger = Literal["auto", "manual", "fork", "edit", "clear"]
Reason = Literal["auto", "manual", "overflow", "fallback"]
TRIGGERS: tuple[str, ...] = get_args(Trigger)
KNOWN = (
    "first_kept_seq", "carried", "trigger", "reason", "instructions", "pinned",
    "tokens_before", "tokens_after", "covers", "previous_boundary", "cleared_before",
    "usage", "summariser",
)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Boundary:
    summary: str
    first_kept_seq: int
    carried: Mapping[str, Any]
    trigger: Trigger
    reason: str | None = None
    instructions: str | None = None
    pinned: str | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    covers: tuple[int, int] | None = None
    previous_boundary: int | None = None
    cleared_before: int | None = None
    usage: Mapping[str, Any] | None = None
    summariser: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # fork: parent, parent_seq, …

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "first_kept_seq": self.first_kept_seq,
            "carried": dict(self.carried),
            "trigger": self.trigger,
            "reason": self.reason,
            "instructions": self.instructions,
            "pinned": self.pinned,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "previous_boundary": self.previous_boundary,
            "usage": dict(self.usage) if self.usage else None,
        }
        if self.covers is not None:
            data["covers"] = list(self.covers)
        if self.cleared_before is not None:
            data["cleared_before"] = self.cleared_before
        if self.summariser is not None:
            data["summariser"] = dict(self.summariser)
        return {**data, **self.extra}

    @classmethod
    def from_entry(cls, entry: LogEntry) -> Boundary:
        data = entry.data
        trigger = data.get("trigger")
        covers = data.get("covers")
        return cls(
            summary=entry.content,
            first_kept_seq=int(data.get("first_kept_seq") or 1),
            carried=data.get("carried") or {},
            trigger=trigger if trigger in TRIGGERS else "auto",
            reason=data.get("reason"),
            instructions=data.get("instructions"),
            pinned=data.get("pinned"),
            tokens_before=data.get("tokens_before"),
            tokens_after=data.get("tokens_after"),
            covers=(int(covers[0]), int(covers[1])) if covers else None,
            previous_boundary=data.get("previous_boundary"),
            cleared_before=data.get("cleared_before"),
            usage=data.get("usage"),
            summariser=data.get("summariser"),
            extra={k: v for k, v in data.items() if k not in KNOWN},
        )

    def entry(self, seq: int) -> LogEntry:
        """The boundary as it will be in the log, to assemble the context it leaves."""
        return LogEntry(seq=seq, kind="boundary", content=self.summary, data=self.to_data())


def with_pinned(pinned: str | None, written: str) -> str:
    """A summary: a person's pinned text verbatim, then what the summariser wrote."""
    return f"{pinned.strip()}\n\n{written.strip()}" if pinned else written.strip()
