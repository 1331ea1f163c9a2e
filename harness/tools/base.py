"""The shape of a tool: a spec the model reads and one async `run`.

A tool returns a `ToolOutcome`; an exception inside `run` is caught by the turn loop and
becomes an error result, so a failing tool never leaves a call without its result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from harness.messages import ToolSpec


@dataclass(frozen=True, kw_only=True)
class ToolContext:
    session_id: int


@dataclass(frozen=True, kw_only=True)
class ToolOutcome:
    text: str
    is_error: bool = False


class Tool(Protocol):
    spec: ToolSpec

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome: ...
