"""`todo_write {"tasks": [{"text", "status"}]}`: replace the session's task list.

The tool only checks its arguments and says what the list now is; the list itself lives in
the log and is folded by `harness.state`, so it survives restarts and (later) compaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.messages import ToolSpec
from harness.tools.base import ToolContext, ToolOutcome

STATUSES = ("pending", "in_progress", "done")
MAX_TASKS = 200

SPEC = ToolSpec(
    name="todo_write",
    description="Replace your task list. Send the whole list each time, with each task's status.",
    parameters={
        "type": "object",
        "properties": {
            "tasks": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string"},
                        "status": {"type": "string", "enum": list(STATUSES)},
                    },
                    "required": ["text", "status"],
                },
            }
        },
        "required": ["tasks"],
    },
)


def problem(arguments: Mapping[str, Any]) -> str | None:
    tasks = arguments.get("tasks")
    if not isinstance(tasks, list):
        return '"tasks" must be a list of {"text", "status"}.'
    if len(tasks) > MAX_TASKS:
        return f"At most {MAX_TASKS} tasks."
    for n, task in enumerate(tasks, 1):
        if not isinstance(task, dict) or not str(task.get("text", "")).strip():
            return f"Task {n} needs a non-empty text."
        if task.get("status") not in STATUSES:
            return f"Task {n}: status must be one of {', '.join(STATUSES)}."
    return None


class TodoWrite:
    spec = SPEC

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        error = problem(arguments)
        if error is not None:
            return ToolOutcome(text=error, is_error=True)
        lines = [f"[{t['status']}] {t['text']}" for t in arguments["tasks"]]
        return ToolOutcome(text="Task list updated:\n" + ("\n".join(lines) or "(empty)"))
