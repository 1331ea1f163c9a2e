"""The shape of a tool: a spec the model reads and one async `run`.

A tool returns a `ToolOutcome`; an exception inside `run` is caught by the turn loop and
becomes an error result, so a failing tool never leaves a call without its result. A tool
that changes durable state says what changed in `data` (stored on the `tool_result` entry,
where `harness.state` folds it from), and `ends_turn` stops the turn after this step (a
question for the user). The context hands a tool the state as of its call and the time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from harness.messages import LogEntry, ToolSpec
from harness.state import SessionState


class LogReader(Protocol):
    """Reading the whole log, both sides of every boundary (for `search_history`)."""

    async def search(self, session_id: int, query: str, limit: int) -> Sequence[LogEntry]: ...

    async def read(self, session_id: int, seq: int) -> LogEntry | None: ...


@dataclass(frozen=True, kw_only=True)
class ToolContext:
    session_id: int
    state: SessionState = field(default_factory=SessionState)
    now: datetime | None = None
    log: LogReader | None = None


@dataclass(frozen=True, kw_only=True)
class ToolOutcome:
    text: str
    is_error: bool = False
    data: Mapping[str, Any] = field(default_factory=dict)
    ends_turn: bool = False


def refused(text: str) -> ToolOutcome:
    return ToolOutcome(text=text, is_error=True)


class Tool(Protocol):
    spec: ToolSpec

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome: ...
