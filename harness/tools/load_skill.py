"""`load_skill {"name": str}`: read a selected skill's body (and its files' names).

The system block lists every selected skill as one line; this is how the agent reads one
whole. The load is durable state: the result names the skill (`data.skill`) and
`harness.state` folds it into `loaded_skills` (`apply_load_skill`) only when it succeeded,
so a boundary carries it and the context after it attaches the body again.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from harness.skills import LOAD_SKILL, by_name, names_of, skill_text
from harness.tools.base import Text, ToolContext, ToolOutcome, TypedTool, refused


class LoadSkillArgs(BaseModel):
    name: Text = Field(max_length=200, description="The skill's name, as the skills list gives it.")


class LoadSkill(TypedTool[LoadSkillArgs]):
    name = LOAD_SKILL
    description = (
        "Read one of the skills listed in the system prompt: its full instructions and the "
        "names of the files kept with it. Load a skill when its description fits the task."
    )
    Args = LoadSkillArgs

    async def call(self, args: LoadSkillArgs, context: ToolContext) -> ToolOutcome:
        skills = await context.skills.selected(context.session_id) if context.skills else ()
        skill = by_name(skills, args.name)
        if skill is None:
            return refused(
                f"No skill named {args.name!r} is selected for this session. "
                f"Selected skills: {names_of(skills)}."
            )
        return ToolOutcome(
            text=skill_text(skill), data={"skill": skill.name, "files": list(skill.files)}
        )
