"""`spawn_subagent {"type": str, "task": str}`: start a child session on a task.

The tool is built per session from the subagent types it selected, so its description lists
them by name and description (the agent chooses one by description). The call returns at
once with the child's id; the child's answer arrives later as a `subagent_result` entry that
starts a turn. The result's `data.subagent` (`{id, type, task}`) is what `harness.state`
folds into the running subagents (`apply_spawn_subagent`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from harness.messages import ToolSpec
from harness.subagents import (
    SPAWN_SUBAGENT,
    SubagentType,
    names_of,
    types_index,
)
from harness.tools.base import Text, ToolContext, ToolOutcome, TypedTool, refused

MAX_TASK = 20_000


class SpawnSubagentArgs(BaseModel):
    type: Text = Field(max_length=200, description="The subagent type's name, as listed.")
    task: Text = Field(
        max_length=MAX_TASK,
        description="Everything the subagent needs to know: it sees nothing of this session.",
    )


class SpawnSubagent(TypedTool[SpawnSubagentArgs]):
    name = SPAWN_SUBAGENT
    description = (
        "Start a subagent on a task in its own session, with its own context. The call "
        "returns at once; the subagent's final answer arrives later as its own message and "
        "starts a new turn, so end your turn (or do other work) instead of waiting. Spawn "
        "several in one reply to run them at once."
    )
    Args = SpawnSubagentArgs

    def __init__(self, types: Sequence[SubagentType] = ()) -> None:
        super().__init__()
        self.types = tuple(types)
        listed = types_index(self.types) if self.types else "(none selected)"
        self.spec = ToolSpec(
            name=self.spec.name,
            description=f"{self.description}\nSubagent types:\n{listed}",
            parameters=self.spec.parameters,
        )

    async def call(self, args: SpawnSubagentArgs, context: ToolContext) -> ToolOutcome:
        chosen = next((t for t in self.types if t.name == args.type), None)
        if chosen is None:
            return refused(f"No subagent type named {args.type!r}. Types: {names_of(self.types)}.")
        if context.subagents is None:
            return refused("Subagents cannot be started here.")
        limits = context.subagent_limits
        running = context.state.subagents
        if len(running) >= limits.max_running:
            ids = ", ".join(str(s.get("id")) for s in running)
            return refused(
                f"{len(running)} subagents are already running (at most {limits.max_running}: "
                f"sessions {ids}). Wait for a result before spawning another."
            )
        depth = await context.subagents.depth(context.session_id)
        if depth >= limits.max_depth:
            return refused(
                f"This session is {depth} subagent level{'s' if depth != 1 else ''} deep and "
                f"subagents may nest at most {limits.max_depth} deep, so it may not spawn "
                "subagents; do the task yourself."
            )
        child = await context.subagents.launch(
            context.session_id, type_name=chosen.name, task=args.task
        )
        return ToolOutcome(
            text=f"Subagent {chosen.name} started as session {child}. Its answer will arrive "
            "as its own message when it finishes.",
            data={"subagent": {"id": child, "type": chosen.name, "task": args.task}},
        )
