"""The built-in tools, by the names tests and presets rely on.

`memory` is offered only to a session that selects a memory space (`memory=True`): a tool
the session cannot use would cost context on every call for nothing. `load_skill` likewise,
only to a session that selects a skill (`skills=True`), and `spawn_subagent` only to one that
selects subagent types (`subagents`, which its description lists).

A tool keeps nothing of a session or a call (that comes in the `ToolContext`), so the same
selection gets the same tool objects every turn: their specs are then the same objects from
call to call, which the wires' encodings and the context's counts are kept by.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from harness.subagents import SubagentType
from harness.tools.ask_user import AskUser
from harness.tools.base import Tool
from harness.tools.history import ReadEntry, SearchHistory
from harness.tools.load_skill import LoadSkill
from harness.tools.memory import Memory
from harness.tools.spawn_subagent import SpawnSubagent
from harness.tools.timers import CancelTimer, SetTimer
from harness.tools.todo_write import TodoWrite


def builtin_tools(
    *, memory: bool = False, skills: bool = False, subagents: Sequence[SubagentType] = ()
) -> dict[str, Tool]:
    return dict(tools_of(memory, skills, tuple(subagents)))


@functools.lru_cache(maxsize=64)
def tools_of(memory: bool, skills: bool, subagents: tuple[SubagentType, ...]) -> dict[str, Tool]:
    tools: list[Tool] = [
        TodoWrite(),
        SetTimer(),
        CancelTimer(),
        AskUser(),
        SearchHistory(),
        ReadEntry(),
        *([Memory()] if memory else []),
        *([LoadSkill()] if skills else []),
        *([SpawnSubagent(subagents)] if subagents else []),
    ]
    return {tool.spec.name: tool for tool in tools}
