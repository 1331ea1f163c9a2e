"""`/api/v1/memory-spaces` and `/api/v1/memory-notes`: parse, check access, call a service.

A stale `version` answers 409 with the note as it now is (`{"detail", "note"}`), so a
client can merge and send again without another read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja import File, Form, Query, Router, Status
from ninja.errors import HttpError
from ninja.files import UploadedFile

from horsie_site.inputs import INT_MAX, bounded_int
from memory_app import selectors, services
from memory_app.schemas import (
    ConflictOut,
    ImportOut,
    NoteIn,
    NoteOut,
    NotePatch,
    RestoreIn,
    RevisionOut,
    SpaceIn,
    SpaceOut,
    SpacePatch,
    VersionIn,
)
from sessions_app.schemas import Detail
from teams_app.selectors import team_for_create

router = Router(tags=["memory"])
ERRORS = {400: Detail, 403: Detail, 404: Detail, 413: Detail, 422: Detail}
WRITE_ERRORS = {**ERRORS, 409: ConflictOut}


@contextlib.contextmanager
def refused_as_http() -> Iterator[None]:
    try:
        yield
    except services.Conflict:
        raise  # answered with the current note, by the handler
    except services.ServiceError as error:
        raise HttpError(error.status, str(error)) from None


def conflict_answer(error: services.Conflict) -> Status[Any]:
    return Status(409, {"detail": str(error), "note": error.note})


# Spaces --------------------------------------------------------------------------------


@router.get("/memory-spaces", response={200: list[SpaceOut], **ERRORS})
def space_list(request: HttpRequest) -> Any:
    return selectors.spaces_visible(request.user)


@router.post("/memory-spaces", response={201: SpaceOut, **ERRORS})
def space_create(request: HttpRequest, payload: SpaceIn) -> Any:
    """`scope: personal` makes a space only you can see; a team space is the team's."""
    team = team_for_create(request.user, payload.team)
    with refused_as_http():
        space = services.space_create(
            user=request.user, team=team, **payload.dict(exclude={"team"})
        )
    return Status(201, space)


@router.post("/memory-spaces/import", response={201: ImportOut, **ERRORS})
def space_import(
    request: HttpRequest,
    file: list[UploadedFile] = File(...),  # noqa: B008 ninja's declaration
    name: str | None = Form(None, min_length=1, max_length=100),  # noqa: B008
    scope: str = Form("team", pattern="^(team|personal)$"),  # noqa: B008
    team: str | None = Form(None, max_length=100),  # noqa: B008
) -> Any:
    """A new space from a zip of `<title>.md` files, markdown files, or an `AGENTS.md` /
    `CLAUDE.md` split into one note per heading. All or nothing; a refusal names the file."""
    owner_team = team_for_create(request.user, team)
    uploads = [(upload.name or "", upload.file, upload.size or 0) for upload in file]
    with refused_as_http():
        space = services.space_import(
            user=request.user, team=owner_team, uploads=uploads, name=name, scope=scope
        )
    titles = list(space.notes.order_by("id").values_list("title", flat=True))
    return Status(201, {"space": space, "notes": titles})


@router.get("/memory-spaces/{space_id}", response={200: SpaceOut, **ERRORS})
def space_get(request: HttpRequest, space_id: int) -> Any:
    return selectors.access_memory_space(request.user, space_id)


@router.patch("/memory-spaces/{space_id}", response={200: SpaceOut, **ERRORS})
def space_patch(request: HttpRequest, space_id: int, payload: SpacePatch) -> Any:
    space = selectors.access_memory_space(request.user, space_id)
    with refused_as_http():
        return services.space_update(space=space, fields=payload.dict(exclude_unset=True))


@router.delete("/memory-spaces/{space_id}", response={204: None, **ERRORS})
def space_delete(request: HttpRequest, space_id: int) -> Any:
    """Also removes the space from every session's and preset's selection (with a notice in
    each session that had it)."""
    space = selectors.access_memory_space(request.user, space_id)
    services.space_delete(space=space, user=request.user)
    return Status(204, None)


@router.get("/memory-spaces/{space_id}/export", response={200: None, **ERRORS})
def space_export(request: HttpRequest, space_id: int) -> HttpResponse:
    """The space as a zip of `<title>.md` files (what `import` takes back)."""
    space = selectors.access_memory_space(request.user, space_id)
    return export_response(space)


def export_response(space: Any) -> HttpResponse:
    response = HttpResponse(services.space_export(space=space), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="memory-{space.pk}.zip"'
    return response


def query_version(request: HttpRequest) -> int | None:
    return bounded_int(request.GET.get("version"), low=1, high=INT_MAX)


# Notes ---------------------------------------------------------------------------------


@router.get("/memory-spaces/{space_id}/notes", response={200: list[NoteOut], **ERRORS})
def note_list(request: HttpRequest, space_id: int, q: str = Query("", max_length=200)) -> Any:
    """Pinned notes (hot rules) first, then the newest; `q` searches titles and text."""
    space = selectors.access_memory_space(request.user, space_id)
    return selectors.notes_of(space, q=q)


@router.post("/memory-spaces/{space_id}/notes", response={201: NoteOut, **ERRORS})
def note_create(request: HttpRequest, space_id: int, payload: NoteIn) -> Any:
    space = selectors.access_memory_space(request.user, space_id)
    with refused_as_http():
        note = services.note_create(space=space, user=request.user, **payload.dict())
    return Status(201, note)


@router.get("/memory-notes/{note_id}", response={200: NoteOut, **ERRORS})
def note_get(request: HttpRequest, note_id: int) -> Any:
    return selectors.access_memory_note(request.user, note_id)


@router.patch("/memory-notes/{note_id}", response={200: NoteOut, **WRITE_ERRORS})
def note_patch(request: HttpRequest, note_id: int, payload: NotePatch) -> Any:
    """Send the `version` you read; a stale one answers 409 with the current note."""
    note = selectors.access_memory_note(request.user, note_id)
    fields = payload.dict(exclude_unset=True)
    try:
        with refused_as_http():
            return services.note_update(note=note, user=request.user, **fields)
    except services.Conflict as error:
        return conflict_answer(error)


@router.delete("/memory-notes/{note_id}", response={204: None, **WRITE_ERRORS})
def note_delete(
    request: HttpRequest,
    note_id: int,
    payload: VersionIn | None = None,
) -> Any:
    """Send the `version` you read (in the body, or as `?version=`); stale → 409."""
    note = selectors.access_memory_note(request.user, note_id)
    read = payload.version if payload is not None else query_version(request)
    if read is None:
        raise HttpError(400, "Send the `version` you read: a delete never goes unseen.")
    try:
        with refused_as_http():
            services.note_delete(note=note, version=read, user=request.user)
    except services.Conflict as error:
        return conflict_answer(error)
    return Status(204, None)


@router.get("/memory-notes/{note_id}/revisions", response={200: list[RevisionOut], **ERRORS})
def revision_list(request: HttpRequest, note_id: int) -> Any:
    """Every change, newest first: by a person (`user`) or an agent (`session`, `seq`)."""
    note = selectors.access_memory_note(request.user, note_id)
    return selectors.revisions_of(note)


@router.post(
    "/memory-notes/{note_id}/revisions/{rev}/restore", response={200: NoteOut, **WRITE_ERRORS}
)
def revision_restore(
    request: HttpRequest, note_id: int, rev: int, payload: RestoreIn | None = None
) -> Any:
    """Make the note what revision `rev` left it, as a new change. With `version`, only
    if the note is still at it."""
    note = selectors.access_memory_note(request.user, note_id)
    revision = selectors.revision_of(note, rev)
    version = payload.version if payload is not None else None
    try:
        with refused_as_http():
            return services.note_restore(
                note=note, number=revision.number, version=version, user=request.user
            )
    except services.Conflict as error:
        return conflict_answer(error)
