"""Changes to skills, bundles, slash commands and subagent types, and skill imports.

Names are what the agent and the composer type (`load_skill {"name"}`, `/name`,
`spawn_subagent {"type"}`), so they are short slugs, unique in the team; a command may not take
a built-in's name. Every text from outside is checked here, so the pages and the API refuse
alike. An import checks every skill before writing one and writes them in one transaction: a
refusal names its file and leaves nothing behind. Deleting a skill, bundle or subagent type
takes it out of every preset's and session's selection, with a notice in each session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import IO, Any

from django.db import IntegrityError, models, transaction

from harness.commands import BUILTINS
from horsie_site.inputs import text_problem
from sessions_app.models import AgentPreset, ModelCard, Session
from sessions_app.services import InputTooLarge, InvalidInput, ServiceError, entry_append
from skills_app import archives
from skills_app.models import Bundle, Skill, SlashCommand, SubagentType
from teams_app.models import Team

# The composer's own commands: a team's command may not take one of these names.
BUILT_IN_COMMANDS = frozenset(command.name for command in BUILTINS)
NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
NAME_RULE = "1 to 64 lowercase letters, digits, `-` or `_`, starting with a letter or digit"
TOOL = re.compile(r"[A-Za-z0-9_.-]{1,128}")
NAME_MAX = 64
DESCRIPTION_MAX = 1024
BODY_MAX = 100_000
META_MAX = 20_000
TOOLS_MAX = 100


class NameTaken(ServiceError):
    status = 409


class ImportRefused(ServiceError):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


# Checks --------------------------------------------------------------------------------


def storable(text: Any, what: str) -> str:
    if not isinstance(text, str):
        raise InvalidInput(f"The {what} must be text.")
    problem = text_problem(text)
    if problem:
        raise InvalidInput(f"The {what} {problem}.")
    return text


def name_check(name: Any, what: str) -> str:
    name = storable(name, f"{what} name").strip()
    if not NAME.fullmatch(name):
        raise InvalidInput(f"The {what} name {name[:80]!r} is not valid: use {NAME_RULE}.")
    return name


def label_check(name: Any, what: str) -> str:
    """A bundle's name: any one line, for people."""
    name = storable(name, f"{what} name").strip()
    if not name or len(name) > NAME_MAX or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise InvalidInput(f"The {what} name is one line of 1 to {NAME_MAX} characters.")
    return name


def description_check(description: Any, what: str) -> str:
    description = storable(description, f"{what} description").strip()
    if "\n" in description or "\r" in description:
        raise InvalidInput(f"The {what} description is one line: it is what the agent reads.")
    if len(description) > DESCRIPTION_MAX:
        raise InvalidInput(
            f"The {what} description has {len(description)} characters; "
            f"the limit is {DESCRIPTION_MAX}."
        )
    return description


def long_text_check(text: Any, what: str, *, required: bool = False) -> str:
    text = storable(text, what)
    if required and not text.strip():
        raise InvalidInput(f"The {what} is empty.")
    if len(text) > BODY_MAX:
        raise InputTooLarge(f"The {what} has {len(text)} characters; the limit is {BODY_MAX}.")
    return text


def files_check(files: Any) -> dict[str, str]:
    """{relative path: text}: plain paths inside the skill's folder, within the limits."""
    if not isinstance(files, dict):
        raise InvalidInput("The skill's `files` map paths to text.")
    if len(files) > archives.SKILL_MAX_FILES:
        raise InputTooLarge(f"A skill keeps at most {archives.SKILL_MAX_FILES} files.")
    for path, text in files.items():
        storable(text, f"file `{str(path)[:100]}`")
        parts = storable(path, "file path").split("/")
        if (
            any(part in ("", ".", "..") or part.startswith(".") for part in parts)
            or "\\" in path or ":" in path or any(ord(c) < 32 for c in path)
            or path == archives.SKILL_FILE
        ):  # fmt: skip
            raise InvalidInput(f"The file path {path[:100]!r} must be a plain relative path.")
    total = sum(len(text.encode()) for text in files.values())
    if total > archives.SKILL_FILES_MAX_BYTES:
        raise InputTooLarge(
            f"The skill's files hold {total} bytes; the limit is {archives.SKILL_FILES_MAX_BYTES}."
        )
    return dict(files)


def meta_check(meta: Any) -> dict[str, Any]:
    if not isinstance(meta, dict):
        raise InvalidInput("The skill's `meta` is a mapping of front-matter fields.")
    if {"name", "description"} & set(meta):
        raise InvalidInput("`name` and `description` are the skill's own fields, not `meta`.")
    if len(json.dumps(meta)) > META_MAX:
        raise InputTooLarge(f"The skill's `meta` is larger than {META_MAX} characters.")
    return dict(meta)


def tools_check(tools: Any) -> list[str]:
    if not isinstance(tools, list) or len(tools) > TOOLS_MAX:
        raise InvalidInput(f"`tools` is a list of at most {TOOLS_MAX} tool names.")
    for tool in tools:
        if not isinstance(tool, str) or not TOOL.fullmatch(tool):
            raise InvalidInput(f"{str(tool)[:80]!r} is not a tool name.")
    if len(set(tools)) != len(tools):
        raise InvalidInput("A tool is named twice in `tools`.")
    return list(tools)


def name_free(model: type[models.Model], team: Team, name: str, exclude: int | None) -> None:
    taken = model.objects.filter(team=team, name=name).exclude(pk=exclude)  # type: ignore[attr-defined]
    if taken.exists():
        raise NameTaken(f"A {what_of(model)} named {name!r} already exists in team {team.name}.")


def what_of(model: type[models.Model]) -> str:
    return {Skill: "skill", Bundle: "bundle", SlashCommand: "slash command",
            SubagentType: "subagent type"}[model]  # fmt: skip


def saved(item: Any, *, exclude: int | None = None) -> Any:
    """Save after checking the name is free; a concurrent taker of the name is a 409 too."""
    name_free(type(item), item.team, item.name, exclude)
    try:
        with transaction.atomic():
            item.save()
    except IntegrityError:
        raise NameTaken(f"A {what_of(type(item))} named {item.name!r} already exists.") from None
    return item


# Skills --------------------------------------------------------------------------------


def bundle_in_team(bundle: Any, team: Team) -> Bundle | None:
    """`bundle`: None, a Bundle, or an id; it must be the team's."""
    if bundle is None:
        return None
    found = bundle if isinstance(bundle, Bundle) else Bundle.objects.filter(pk=bundle).first()
    if found is None or found.team_id != team.pk:
        raise InvalidInput(f"No such bundle: {getattr(bundle, 'pk', bundle)}.")
    return found


SKILL_CHECKS = {
    "name": lambda v: name_check(v, "skill"),
    "description": lambda v: description_check(v, "skill"),
    "body": lambda v: long_text_check(v, "skill body"),
    "files": files_check,
    "meta": meta_check,
}


def skill_fields(fields: Mapping[str, Any], team: Team) -> dict[str, Any]:
    checked = {name: SKILL_CHECKS[name](value) for name, value in fields.items()
               if name in SKILL_CHECKS}  # fmt: skip
    if "bundle" in fields:
        checked["bundle"] = bundle_in_team(fields["bundle"], team)
    return checked


def skill_create(*, user: Any, team: Team, fields: Mapping[str, Any]) -> Skill:
    fields = {"name": None, **fields}
    skill = Skill(team=team, created_by=user, **skill_fields(fields, team))
    if not skill.description:
        raise InvalidInput("The skill needs a description: it is how the agent picks it.")
    return saved(skill)  # type: ignore[no-any-return]


def skill_update(*, skill: Skill, fields: Mapping[str, Any]) -> Skill:
    for name, value in skill_fields(fields, skill.team).items():
        setattr(skill, name, value)
    if not skill.description:
        raise InvalidInput("The skill needs a description: it is how the agent picks it.")
    return saved(skill, exclude=skill.pk)  # type: ignore[no-any-return]


def skill_delete(*, skill: Skill, user: Any) -> None:
    with transaction.atomic():
        selections_drop(team=skill.team, field="skills", pk=skill.pk,
                        text=f"Skill `{skill.name}` was deleted", user=user)  # fmt: skip
        skill.delete()


def skills_import(
    *, user: Any, team: Team, upload: tuple[str, IO[bytes], int]
) -> tuple[list[Skill], list[str]]:
    """Every skill in the zip, or none: returns them and the paths ignored as litter."""
    try:
        found = archives.unpacked(*upload)
    except archives.Refused as refused:
        raise ImportRefused(str(refused), refused.status) from None
    drafts = [(draft, draft_fields(draft)) for draft in found.skills]
    taken = set(
        Skill.objects.filter(team=team, name__in=[f["name"] for _, f in drafts]).values_list(
            "name", flat=True
        )
    )
    for draft, fields in drafts:
        if fields["name"] in taken:
            raise ImportRefused(
                f"{draft.source}: a skill named {fields['name']!r} already exists in team "
                f"{team.name}; rename or delete one of them."
            )
    with transaction.atomic():
        skills = [skill_create(user=user, team=team, fields=fields) for _, fields in drafts]
    return skills, found.ignored


def draft_fields(draft: archives.SkillDraft) -> dict[str, Any]:
    fields = {"name": draft.name, "description": draft.description, "body": draft.body,
              "files": draft.files, "meta": draft.meta}  # fmt: skip
    try:
        return {name: SKILL_CHECKS[name](value) for name, value in fields.items()}
    except ServiceError as error:
        raise ImportRefused(f"{draft.source}: {error}", error.status) from None


def skills_export(*, team: Team, bundle: Bundle | None = None) -> bytes:
    skills = Skill.objects.filter(team=team)
    if bundle is not None:
        skills = skills.filter(bundle=bundle)
    rows = skills.order_by("name").values("name", "description", "meta", "body", "files")
    return archives.zip_of(list(rows))


# Bundles -------------------------------------------------------------------------------


def bundle_skills(team: Team, ids: Any) -> list[Skill]:
    if not isinstance(ids, list):
        raise InvalidInput("`skills` is a list of skill ids.")
    found = Skill.objects.filter(team=team).in_bulk(ids)
    missing = [pk for pk in ids if pk not in found]
    if missing:
        raise InvalidInput(f"No such skill: {missing[0]}.")
    return [found[pk] for pk in ids]


def bundle_create(*, user: Any, team: Team, fields: Mapping[str, Any]) -> Bundle:
    bundle = Bundle(team=team, created_by=user, name=label_check(fields.get("name"), "bundle"),
                    description=description_check(fields.get("description", ""), "bundle"))  # fmt: skip
    skills = bundle_skills(team, fields.get("skills") or [])
    with transaction.atomic():
        saved(bundle)
        Skill.objects.filter(pk__in=[s.pk for s in skills]).update(bundle=bundle)
    return bundle


def bundle_update(*, bundle: Bundle, fields: Mapping[str, Any]) -> Bundle:
    """`skills` replaces the bundle's skills: those left out leave it; those named move into
    it from any other bundle (a skill is in one bundle at most)."""
    if "name" in fields:
        bundle.name = label_check(fields["name"], "bundle")
    if "description" in fields:
        bundle.description = description_check(fields["description"], "bundle")
    skills = bundle_skills(bundle.team, fields["skills"]) if "skills" in fields else None
    with transaction.atomic():
        saved(bundle, exclude=bundle.pk)
        if skills is not None:
            ids = [s.pk for s in skills]
            Skill.objects.filter(bundle=bundle).exclude(pk__in=ids).update(bundle=None)
            Skill.objects.filter(pk__in=ids).update(bundle=bundle)
    return bundle


def bundle_delete(*, bundle: Bundle, user: Any) -> None:
    """The bundle goes; its skills stay, in no bundle."""
    with transaction.atomic():
        selections_drop(team=bundle.team, field="bundles", pk=bundle.pk,
                        text=f"Bundle `{bundle.name}` was deleted", user=user)  # fmt: skip
        bundle.delete()


# Slash commands ------------------------------------------------------------------------


def command_name_check(name: Any) -> str:
    name = name_check(storable(name, "command name").strip().removeprefix("/"), "command")
    if name in BUILT_IN_COMMANDS:
        raise InvalidInput(f"`/{name}` is a built-in command; choose another name.")
    return name


COMMAND_CHECKS = {
    "name": command_name_check,
    "description": lambda v: description_check(v, "command"),
    "template": lambda v: long_text_check(v, "command template", required=True),
}


def command_create(*, user: Any, team: Team, fields: Mapping[str, Any]) -> SlashCommand:
    checked = {name: check(fields.get(name, "")) for name, check in COMMAND_CHECKS.items()}
    return saved(SlashCommand(team=team, created_by=user, **checked))  # type: ignore[no-any-return]


def command_update(*, command: SlashCommand, fields: Mapping[str, Any]) -> SlashCommand:
    for name, value in fields.items():
        if name in COMMAND_CHECKS:
            setattr(command, name, COMMAND_CHECKS[name](value))
    return saved(command, exclude=command.pk)  # type: ignore[no-any-return]


# Subagent types ------------------------------------------------------------------------


def card_in_team(card: Any, team: Team) -> ModelCard | None:
    if card is None:
        return None
    found = card if isinstance(card, ModelCard) else ModelCard.objects.filter(pk=card).first()
    if found is None or found.team_id != team.pk:
        raise InvalidInput(f"No such model card: {getattr(card, 'pk', card)}.")
    return found


SUBAGENT_CHECKS = {
    "name": lambda v: name_check(v, "subagent type"),
    "description": lambda v: description_check(v, "subagent type"),
    "system_prompt": lambda v: long_text_check(v, "system prompt"),
    "tools": tools_check,
}


def subagent_fields(fields: Mapping[str, Any], team: Team) -> dict[str, Any]:
    checked = {name: SUBAGENT_CHECKS[name](value) for name, value in fields.items()
               if name in SUBAGENT_CHECKS}  # fmt: skip
    if "model" in fields:
        checked["model"] = card_in_team(fields["model"], team)
    return checked


def subagent_type_create(*, user: Any, team: Team, fields: Mapping[str, Any]) -> SubagentType:
    fields = {"name": None, **fields}
    item = SubagentType(team=team, created_by=user, **subagent_fields(fields, team))
    if not item.description:
        raise InvalidInput("The subagent type needs a description: it is how the agent picks it.")
    return saved(item)  # type: ignore[no-any-return]


def subagent_type_update(*, item: SubagentType, fields: Mapping[str, Any]) -> SubagentType:
    for name, value in subagent_fields(fields, item.team).items():
        setattr(item, name, value)
    if not item.description:
        raise InvalidInput("The subagent type needs a description: it is how the agent picks it.")
    return saved(item, exclude=item.pk)  # type: ignore[no-any-return]


def subagent_type_delete(*, item: SubagentType, user: Any) -> None:
    with transaction.atomic():
        selections_drop(team=item.team, field="subagent_types", pk=item.pk,
                        text=f"Subagent type `{item.name}` was deleted", user=user)  # fmt: skip
        item.delete()


# Selections ----------------------------------------------------------------------------


def selections_drop(*, team: Team, field: str, pk: int, text: str, user: Any) -> None:
    """Take `pk` out of `field` in every preset and session of the team; each session that
    had it gets a notice. Read in Python: SQLite's JSON fields have no `contains`."""
    for model in (AgentPreset, Session):
        rows = model.objects.filter(team=team).values_list("pk", field)  # type: ignore[attr-defined]
        for row_pk, selection in rows.iterator():
            if pk not in (selection or []):
                continue
            kept = [item for item in selection if item != pk]
            model.objects.filter(pk=row_pk).update(**{field: kept})  # type: ignore[attr-defined]
            if model is Session:
                entry_append(
                    session_id=row_pk, kind="notice", author=user,
                    content=f"{text}; it is no longer selected in this session.",
                    data={"code": "selection_removed", "field": field, "id": pk},
                )  # fmt: skip
