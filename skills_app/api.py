"""`/api/v1/skills`, `/bundles`, `/commands`, `/subagent-types`: parse, check access, call a
service. Every object is its team's: another team's answers 404."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja import File, Form, Query, Router, Status
from ninja.errors import HttpError
from ninja.files import UploadedFile

from sessions_app.schemas import Detail
from skills_app import selectors, services
from skills_app.schemas import (
    BundleIn,
    BundleOut,
    BundlePatch,
    CommandIn,
    CommandOut,
    CommandPatch,
    ImportOut,
    SkillFilesOut,
    SkillIn,
    SkillOut,
    SkillPatch,
    SubagentTypeIn,
    SubagentTypeOut,
    SubagentTypePatch,
)
from teams_app.selectors import team_for_create

router = Router(tags=["skills"])
ERRORS = {400: Detail, 403: Detail, 404: Detail, 409: Detail, 413: Detail, 422: Detail}


@contextlib.contextmanager
def refused_as_http() -> Iterator[None]:
    try:
        yield
    except services.ServiceError as error:
        raise HttpError(error.status, str(error)) from None


# Skills --------------------------------------------------------------------------------


@router.get("/skills", response={200: list[SkillOut], **ERRORS})
def skill_list(request: HttpRequest, q: str = Query("", max_length=200)) -> Any:
    """Your teams' skills by name; `q` searches names, descriptions and bodies."""
    return selectors.skills_visible(request.user, q=q)


@router.post("/skills", response={201: SkillOut, **ERRORS})
def skill_create(request: HttpRequest, payload: SkillIn) -> Any:
    team = team_for_create(request.user, payload.team)
    with refused_as_http():
        skill = services.skill_create(
            user=request.user, team=team, fields=payload.dict(exclude={"team"})
        )
    return Status(201, skill)


@router.post("/skills/import", response={201: ImportOut, **ERRORS})
def skill_import(
    request: HttpRequest,
    file: UploadedFile = File(...),  # noqa: B008 ninja's declaration
    team: str | None = Form(None, max_length=100),  # noqa: B008
) -> Any:
    """A zip of folders, each holding a `SKILL.md` (YAML front matter `name`, `description`,
    other fields kept in `meta`; a markdown body) and the files the skill refers to. All or
    nothing: a refusal names its file. `ignored` lists hidden files and macOS litter."""
    owner_team = team_for_create(request.user, team)
    with refused_as_http():
        skills, ignored = services.skills_import(
            user=request.user, team=owner_team,
            upload=(file.name or "upload.zip", file.file, file.size or 0),
        )  # fmt: skip
    return Status(201, {"skills": skills, "ignored": ignored})


@router.get("/skills/export", response={200: None, **ERRORS})
def skill_export(
    request: HttpRequest,
    team: str | None = Query(None, max_length=100),
    bundle: int | None = Query(None, ge=1, le=2**63 - 1),
) -> HttpResponse:
    """The team's skills (or one bundle's) as a zip of `<name>/SKILL.md` folders with their
    files: what `import` takes back."""
    owner_team = team_for_create(request.user, team)
    chosen = selectors.access_bundle(request.user, bundle) if bundle is not None else None
    if chosen is not None and chosen.team_id != owner_team.pk:
        raise HttpError(400, f"Bundle {bundle} belongs to another team.")
    return export_response(services.skills_export(team=owner_team, bundle=chosen), owner_team)


def export_response(data: bytes, team: Any) -> HttpResponse:
    response = HttpResponse(data, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="skills-{team.pk}.zip"'
    return response


@router.get("/skills/{skill_id}", response={200: SkillOut, **ERRORS})
def skill_get(request: HttpRequest, skill_id: int) -> Any:
    return selectors.access_skill(request.user, skill_id)


@router.get("/skills/{skill_id}/files", response={200: SkillFilesOut, **ERRORS})
def skill_files(request: HttpRequest, skill_id: int) -> Any:
    """The skill's other files, with their text."""
    return selectors.access_skill(request.user, skill_id)


@router.patch("/skills/{skill_id}", response={200: SkillOut, **ERRORS})
def skill_patch(request: HttpRequest, skill_id: int, payload: SkillPatch) -> Any:
    skill = selectors.access_skill(request.user, skill_id)
    with refused_as_http():
        return services.skill_update(skill=skill, fields=payload.dict(exclude_unset=True))


@router.delete("/skills/{skill_id}", response={204: None, **ERRORS})
def skill_delete(request: HttpRequest, skill_id: int) -> Any:
    """Also takes it out of every session's and preset's selection."""
    skill = selectors.access_skill(request.user, skill_id)
    services.skill_delete(skill=skill, user=request.user)
    return Status(204, None)


# Bundles -------------------------------------------------------------------------------


@router.get("/bundles", response={200: list[BundleOut], **ERRORS})
def bundle_list(request: HttpRequest) -> Any:
    return selectors.bundles_visible(request.user)


@router.post("/bundles", response={201: BundleOut, **ERRORS})
def bundle_create(request: HttpRequest, payload: BundleIn) -> Any:
    """`skills` move into the bundle (a skill is in one bundle at most)."""
    team = team_for_create(request.user, payload.team)
    with refused_as_http():
        bundle = services.bundle_create(
            user=request.user, team=team, fields=payload.dict(exclude={"team"})
        )
    return Status(201, bundle)


@router.get("/bundles/{bundle_id}", response={200: BundleOut, **ERRORS})
def bundle_get(request: HttpRequest, bundle_id: int) -> Any:
    return selectors.access_bundle(request.user, bundle_id)


@router.patch("/bundles/{bundle_id}", response={200: BundleOut, **ERRORS})
def bundle_patch(request: HttpRequest, bundle_id: int, payload: BundlePatch) -> Any:
    """`skills` replaces the bundle's skills."""
    bundle = selectors.access_bundle(request.user, bundle_id)
    with refused_as_http():
        return services.bundle_update(bundle=bundle, fields=payload.dict(exclude_unset=True))


@router.delete("/bundles/{bundle_id}", response={204: None, **ERRORS})
def bundle_delete(request: HttpRequest, bundle_id: int) -> Any:
    """The bundle goes; its skills stay."""
    bundle = selectors.access_bundle(request.user, bundle_id)
    services.bundle_delete(bundle=bundle, user=request.user)
    return Status(204, None)


# Slash commands ------------------------------------------------------------------------


@router.get("/commands", response={200: list[CommandOut], **ERRORS})
def command_list(request: HttpRequest) -> Any:
    return selectors.commands_visible(request.user)


@router.post("/commands", response={201: CommandOut, **ERRORS})
def command_create(request: HttpRequest, payload: CommandIn) -> Any:
    """`$ARGUMENTS` in `template` is replaced by what follows `/name` when it is sent. The
    built-ins' names (help, compact, summary-n-fork, handoff, rewind) are refused."""
    team = team_for_create(request.user, payload.team)
    with refused_as_http():
        command = services.command_create(
            user=request.user, team=team, fields=payload.dict(exclude={"team"})
        )
    return Status(201, command)


@router.get("/commands/{command_id}", response={200: CommandOut, **ERRORS})
def command_get(request: HttpRequest, command_id: int) -> Any:
    return selectors.access_command(request.user, command_id)


@router.patch("/commands/{command_id}", response={200: CommandOut, **ERRORS})
def command_patch(request: HttpRequest, command_id: int, payload: CommandPatch) -> Any:
    command = selectors.access_command(request.user, command_id)
    with refused_as_http():
        return services.command_update(command=command, fields=payload.dict(exclude_unset=True))


@router.delete("/commands/{command_id}", response={204: None, **ERRORS})
def command_delete(request: HttpRequest, command_id: int) -> Any:
    selectors.access_command(request.user, command_id).delete()
    return Status(204, None)


# Subagent types ------------------------------------------------------------------------


@router.get("/subagent-types", response={200: list[SubagentTypeOut], **ERRORS})
def subagent_type_list(request: HttpRequest) -> Any:
    return selectors.subagent_types_visible(request.user)


@router.post("/subagent-types", response={201: SubagentTypeOut, **ERRORS})
def subagent_type_create(request: HttpRequest, payload: SubagentTypeIn) -> Any:
    team = team_for_create(request.user, payload.team)
    with refused_as_http():
        item = services.subagent_type_create(
            user=request.user, team=team, fields=payload.dict(exclude={"team"})
        )
    return Status(201, item)


@router.get("/subagent-types/{type_id}", response={200: SubagentTypeOut, **ERRORS})
def subagent_type_get(request: HttpRequest, type_id: int) -> Any:
    return selectors.access_subagent_type(request.user, type_id)


@router.patch("/subagent-types/{type_id}", response={200: SubagentTypeOut, **ERRORS})
def subagent_type_patch(request: HttpRequest, type_id: int, payload: SubagentTypePatch) -> Any:
    item = selectors.access_subagent_type(request.user, type_id)
    with refused_as_http():
        return services.subagent_type_update(item=item, fields=payload.dict(exclude_unset=True))


@router.delete("/subagent-types/{type_id}", response={204: None, **ERRORS})
def subagent_type_delete(request: HttpRequest, type_id: int) -> Any:
    item = selectors.access_subagent_type(request.user, type_id)
    services.subagent_type_delete(item=item, user=request.user)
    return Status(204, None)
