"""API shapes for skills, bundles, slash commands and subagent types (`XIn` / `XOut`)."""

from __future__ import annotations

from typing import Annotated, Any

from ninja import Field, Schema

from sessions_app.schemas import Id, Patch

Name = Annotated[str, Field(min_length=1, max_length=64)]
Description = Annotated[str, Field(max_length=1024)]
LongText = Annotated[str, Field(max_length=100_000)]
Tool = Annotated[str, Field(min_length=1, max_length=128)]


class SkillIn(Schema):
    name: Name
    description: Description = Field(min_length=1)
    body: LongText = ""
    files: dict[str, str] = Field(default_factory=dict, max_length=200)
    meta: dict[str, Any] = Field(default_factory=dict)
    bundle: Id | None = None
    team: str | None = None


class SkillPatch(Patch):
    nullable = frozenset({"bundle"})
    name: Name | None = None
    description: Description | None = None
    body: LongText | None = None
    files: dict[str, str] | None = Field(default=None, max_length=200)
    meta: dict[str, Any] | None = None
    bundle: Id | None = None


class SkillOut(Schema):
    id: int
    name: str
    description: str
    body: str
    bundle: int | None = Field(alias="bundle_id")
    files: list[str]
    meta: dict[str, Any]
    team: str = Field(alias="team.name")

    @staticmethod
    def resolve_files(skill: Any) -> list[str]:
        return sorted(skill.files or {})


class SkillFilesOut(Schema):
    """One skill with its files' text."""

    id: int
    name: str
    files: dict[str, str]


class ImportOut(Schema):
    skills: list[SkillOut]
    ignored: list[str]


class BundleIn(Schema):
    name: Name
    description: Description = ""
    skills: list[Id] = Field(default_factory=list, max_length=10_000)
    team: str | None = None


class BundlePatch(Patch):
    name: Name | None = None
    description: Description | None = None
    skills: list[Id] | None = Field(default=None, max_length=10_000)


class BundleOut(Schema):
    id: int
    name: str
    description: str
    skills: list[int]
    team: str = Field(alias="team.name")

    @staticmethod
    def resolve_skills(bundle: Any) -> list[int]:
        return sorted(skill.pk for skill in bundle.skills.all())


class CommandIn(Schema):
    name: Name
    description: Description = ""
    template: LongText = Field(min_length=1)
    team: str | None = None


class CommandPatch(Patch):
    name: Name | None = None
    description: Description | None = None
    template: LongText | None = Field(default=None, min_length=1)


class CommandOut(Schema):
    id: int
    name: str
    description: str
    template: str
    team: str = Field(alias="team.name")


class SubagentTypeIn(Schema):
    name: Name
    description: Description = Field(min_length=1)
    system_prompt: LongText = ""
    model: Id | None = None
    tools: list[Tool] = Field(default_factory=list, max_length=100)
    team: str | None = None


class SubagentTypePatch(Patch):
    nullable = frozenset({"model"})
    name: Name | None = None
    description: Description | None = None
    system_prompt: LongText | None = None
    model: Id | None = None
    tools: list[Tool] | None = Field(default=None, max_length=100)


class SubagentTypeOut(Schema):
    id: int
    name: str
    description: str
    system_prompt: str
    model: int | None = Field(alias="model_id")
    tools: list[str]
    team: str = Field(alias="team.name")
