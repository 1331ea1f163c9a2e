"""The built-in tools, by the names tests and presets rely on."""

from __future__ import annotations

from harness.tools.ask_user import AskUser
from harness.tools.base import Tool
from harness.tools.history import ReadEntry, SearchHistory
from harness.tools.timers import CancelTimer, SetTimer
from harness.tools.todo_write import TodoWrite


def builtin_tools() -> dict[str, Tool]:
    tools: list[Tool] = [
        TodoWrite(),
        SetTimer(),
        CancelTimer(),
        AskUser(),
        SearchHistory(),
        ReadEntry(),
    ]
    return {tool.spec.name: tool for tool in tools}
