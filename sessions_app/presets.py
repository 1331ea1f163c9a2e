"""Agent-preset writes and the selection check that presets and sessions share.

`selections_check` is the one rule for what a preset or a session may select, used by the
API (`/presets`, `/sessions`) and by the pages' forms alike, so both refuse the same input
with the same words. A preset is checked whole before anything is written: a refused
selection leaves the preset exactly as it was.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from memory_app.selectors import SelectionRefused
from memory_app.selectors import selection_check as memory_selection_check
from sessions_app.models import AgentPreset
from sessions_app.services import InvalidInput
from skills_app.selectors import SelectionRefused as SkillSelectionRefused
from skills_app.selectors import selection_check as skills_selection_check
from teams_app.models import Team

PICKED = ("skills", "bundles", "subagent_types")


class SelectionInvalid(InvalidInput):
    """A selection refused; `field` names what was refused (memory, skills, …)."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


def selections_check(
    fields: dict[str, Any], *, user: Any, team: Team, current: list[Any] | None = None
) -> None:
    """Memory spaces must be the user's to see and in the team (`current`: the selection
    being changed, whose spaces may stay); skills, bundles and subagent types must exist and
    be the team's; no MCP server can be selected until they exist."""
    if fields.get("memory"):
        try:
            memory_selection_check(user=user, team=team, items=fields["memory"], keep=current or [])
        except SelectionRefused as refused:
            raise SelectionInvalid(str(refused), field="memory") from None
    for name in PICKED:
        if fields.get(name):
            try:
                skills_selection_check(user=user, team=team, field=name, ids=fields[name])
            except SkillSelectionRefused as refused:
                raise SelectionInvalid(str(refused), field=name) from None
    if fields.get("mcp_servers"):
        message = f"No such MCP server: {fields['mcp_servers'][0]}."
        raise SelectionInvalid(message, field="mcp_servers")


def preset_create(*, user: Any, team: Team, fields: dict[str, Any]) -> AgentPreset:
    selections_check(fields, user=user, team=team)
    return AgentPreset.objects.create(team=team, **fields)


@transaction.atomic
def preset_update(*, user: Any, preset: AgentPreset, fields: dict[str, Any]) -> AgentPreset:
    selections_check(fields, user=user, team=preset.team, current=preset.memory)
    for name, value in fields.items():
        setattr(preset, name, value)
    preset.save()
    return preset
