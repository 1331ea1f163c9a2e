"""`todo_write {"tasks": [{"text", "status"}]}`: replace the session's task list.

The tool only checks its arguments and says what the list now is; the list itself lives in
the log and is folded by `harness.state` (`apply_todo_write`, from the call's arguments), so
it survives restarts and compaction.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from harness.tools.base import Text, ToolContext, ToolOutcome, TypedTool

STATUSES = ("pending", "in_progress", "done")
MAX_TASKS = 200


class Task(BaseModel):
    text: Text
    status: Literal["pending", "in_progress", "done"]


class TodoArgs(BaseModel):
    tasks: list[Task] = Field(max_length=MAX_TASKS)


class TodoWrite(TypedTool[TodoArgs]):
    name = "todo_write"
    description = "Replace your task list. Send the whole list each time, with each task's status."
    Args = TodoArgs

    async def call(self, args: TodoArgs, context: ToolContext) -> ToolOutcome:
        lines = [f"[{t.status}] {t.text}" for t in args.tasks]
        return ToolOutcome(text="Task list updated:\n" + ("\n".join(lines) or "(empty)"))
