"""Skills, bundles, slash commands and subagent types: a team's shared prompts.

A skill is what the agent may load by name: its `name` and one-line `description` sit in every
call's context (the skills index); its `body` and the names of its `files` are handed over only
when the agent loads it. A skill is in at most one bundle (`bundle`), so a bundle's `skills`
is the reverse of that key and a skill moves between bundles by one write. Names are unique in
a team, because the agent and the composer name these objects by name, never by id.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from teams_app.models import Team


def empty_dict() -> dict[str, Any]:
    return {}


def empty_list() -> list[Any]:
    return []


class Named(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=64)
    description = models.CharField(max_length=1024, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
        related_name="+",
    )  # fmt: skip
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class Bundle(Named):
    class Meta(Named.Meta):
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="one_bundle_name")]


class Skill(Named):
    body = models.TextField(blank=True)
    # The skill folder's other files, {relative path: text}, listed when the skill loads.
    files = models.JSONField(default=empty_dict, blank=True)
    # The SKILL.md front matter beyond `name` and `description`, kept for export.
    meta = models.JSONField(default=empty_dict, blank=True)
    bundle = models.ForeignKey(
        Bundle, on_delete=models.SET_NULL, null=True, blank=True, related_name="skills"
    )

    class Meta(Named.Meta):
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="one_skill_name")]


class SlashCommand(Named):
    # `$ARGUMENTS` is replaced by what follows `/name` when the command is sent.
    template = models.TextField()

    class Meta(Named.Meta):
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="one_command_name")]


class SubagentType(Named):
    system_prompt = models.TextField(blank=True)
    model = models.ForeignKey(
        "sessions_app.ModelCard", on_delete=models.SET_NULL, null=True, blank=True,
        related_name="+",
    )  # fmt: skip
    tools = models.JSONField(default=empty_list, blank=True)  # tool names; empty: the defaults

    class Meta(Named.Meta):
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="one_subagent_name")]
