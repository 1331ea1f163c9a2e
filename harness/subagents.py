"""Subagents in the core: the types a session may spawn, and the port that starts a child.

A subagent is a child session with its own context and compaction; the core never runs it.
`spawn_subagent` asks the apps' `SubagentLauncher` to create and dispatch the child, and is
answered at once with the child's id: the child's final answer comes back later as its own
`subagent_result` entry in the parent's log (the apps queue it like a fired timer), never
inside a tool result, so a wide, noisy task costs the parent one entry.

Running subagents are durable state (`SessionState.subagents`: `{id, type, task}`), added by
a successful spawn and removed by the child's `subagent_result`, so a boundary carries them
verbatim. Every deployment has limits (`SubagentLimits`, set by the apps through
`TurnConfig`; by default a child may spawn but a grandchild may not, and one session has at
most four children running at once). Each refusal is an error result the model can act on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

SPAWN_SUBAGENT = "spawn_subagent"
MAX_DEPTH = 2
MAX_RUNNING = 4


@dataclass(frozen=True, kw_only=True)
class SubagentLimits:
    max_depth: int = MAX_DEPTH  # a main session is depth 0; a session this deep may not spawn
    max_running: int = MAX_RUNNING  # children of one session running at once


@dataclass(frozen=True, kw_only=True)
class SubagentType:
    name: str
    description: str


class SubagentLauncher(Protocol):
    """Starts child sessions for a parent; the Django apps implement it on the dispatcher."""

    async def depth(self, session_id: int) -> int:
        """How many subagent parents the session has above it (0 for a main session)."""
        ...

    async def launch(self, session_id: int, *, type_name: str, task: str) -> int:
        """Create the child with `task` as its first input, dispatch its turn, return its id."""
        ...


def types_index(types: Sequence[SubagentType]) -> str:
    return "\n".join(f"- {t.name} — {' '.join(t.description.split())}" for t in types)


def names_of(types: Sequence[SubagentType]) -> str:
    return ", ".join(t.name for t in types) or "none"
