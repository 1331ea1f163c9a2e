"""Memory pages: the spaces of the team (and your personal ones), and a space with its notes.

Every change calls the same services as the API. A note is edited in place: its card swaps
for a form, and saving swaps the card back. A stale save never overwrites: the form comes
back beside the note as it now is, with the difference highlighted and the reader's text
kept, carrying the new version, so the person merges and saves again. htmx swaps 2xx, 400
and 413 answers (base.html), so a conflict and a note deleted meanwhile are answered to htmx
as 200 with the form saying what happened; a plain form post gets the real status.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect, reswap, retarget

from horsie_site.inputs import INT_MAX, bounded_int
from memory_app import api, panels, services
from memory_app.forms import SpaceForm, SpaceSettingsForm
from memory_app.models import MemoryNote, MemorySpace
from memory_app.selectors import (
    access_memory_note,
    access_memory_space,
    note_tokens,
    notes_of,
    revision_of,
    revisions_of,
    space_costs,
    spaces_visible,
)
from sessions_app.templatetags.compaction import line_diff

LIST = "memory_app/list.html"
SPACE = "memory_app/space.html"


def htmx(request: HttpRequest) -> bool:
    return bool(getattr(request, "htmx", False))


def shown_status(request: HttpRequest, status: int) -> int:
    """htmx swaps only 2xx, 400 and 413: other refusals reach it as 200, saying so."""
    return 200 if htmx(request) and status not in (400, 413) else status


def go(request: HttpRequest, url: str) -> HttpResponse:
    return HttpResponseClientRedirect(url) if htmx(request) else redirect(url)


def posted(request: HttpRequest, name: str) -> str:
    return request.POST.get(name, "").replace("\r\n", "\n")  # forms send CRLF


def posted_version(request: HttpRequest) -> int | None:
    return bounded_int(request.POST.get("version"), low=1, high=INT_MAX)


def required_version(request: HttpRequest) -> int:
    """The version the form was showing: a write must name it, so a stale one can refuse."""
    version = posted_version(request)
    if version is None:
        raise services.InvalidInput("Which version did you see? `version` is missing.")
    return version


# Spaces --------------------------------------------------------------------------------


def list_context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    team = request.team  # type: ignore[attr-defined]
    spaces = list(spaces_visible(request.user, team=team)) if team is not None else []
    costs = space_costs(spaces)
    rows = [{"space": space, **costs[space.pk]} for space in spaces]
    return {
        "team": team,
        "team_rows": [row for row in rows if row["space"].scope == "team"],
        "personal_rows": [row for row in rows if row["space"].scope == "personal"],
        "form": SpaceForm(),
        **extra,
    }


@login_required
@require_GET
def space_list(request: HttpRequest) -> TemplateResponse:
    return TemplateResponse(request, LIST, list_context(request))


@login_required
@require_POST
def space_new(request: HttpRequest) -> HttpResponse:
    form = SpaceForm(request.POST)
    team = request.team  # type: ignore[attr-defined]
    if team is None:
        raise Http404("You belong to no team.")
    if form.is_valid():
        try:
            space = services.space_create(user=request.user, team=team, **form.cleaned_data)
        except services.ServiceError as error:
            form.add_error(None, str(error))
        else:
            return go(request, reverse("memory:space", args=[space.pk]))
    template = f"{LIST}#space-form" if htmx(request) else LIST
    return TemplateResponse(request, template, list_context(request, form=form), status=400)


@login_required
@require_POST
def space_import(request: HttpRequest) -> HttpResponse:
    """A new space from a zip of `<title>.md` files, markdown files, or an AGENTS.md."""
    team = request.team  # type: ignore[attr-defined]
    if team is None:
        raise Http404("You belong to no team.")
    files = request.FILES.getlist("file")
    scope = "personal" if request.POST.get("scope") == "personal" else "team"
    try:
        space = services.space_import(
            user=request.user, team=team, scope=scope, name=request.POST.get("name") or None,
            uploads=[(f.name or "", f.file, f.size or 0) for f in files],
        )  # fmt: skip
    except services.ServiceError as error:
        template = f"{LIST}#import-form" if htmx(request) else LIST
        context = list_context(request, import_error=str(error))
        return TemplateResponse(request, template, context, status=error.status)
    return go(request, reverse("memory:space", args=[space.pk]))


def space_context(space: MemorySpace, q: str = "", **extra: Any) -> dict[str, Any]:
    budget = panels.space_budget(space)
    notes = [
        {"note": note, "tokens": note_tokens(note.title, note.body),
         "left_out": note.title in budget["left_out"]}
        for note in notes_of(space, q=q).select_related("updated_by_session")
    ]  # fmt: skip
    total = (
        sum(row["tokens"] for row in notes) if not q else space_costs([space])[space.pk]["tokens"]
    )
    return {
        "space": space,
        "notes": notes,
        "q": q,
        "tokens": total,
        "budget": budget,
        "stamp": panels.space_stamp(space),
        "settings_form": SpaceSettingsForm(
            initial={
                "name": space.name,
                "description": space.description,
                "budget_tokens": space.budget_tokens,
            }  # fmt: skip
        ),
        "draft": {"title": "", "body": "", "pinned": False},
        **extra,
    }


@login_required
@require_GET
def space_detail(request: HttpRequest, space_id: int) -> TemplateResponse:
    space = access_memory_space(request.user, space_id)
    q = request.GET.get("q", "").strip()[:200]
    template = f"{SPACE}#note-list" if htmx(request) and "q" in request.GET else SPACE
    return TemplateResponse(request, template, space_context(space, q))


@login_required
@require_GET
def space_live(request: HttpRequest, space_id: int) -> HttpResponse:
    """The page's poll: nothing (204) while no note changed since `rev`; else the note list
    and the cost, fresh, so an agent's write shows up marked with its session."""
    space = access_memory_space(request.user, space_id)
    if bounded_int(request.GET.get("rev"), high=INT_MAX) == panels.space_stamp(space):
        return HttpResponse(status=204)
    q = request.GET.get("q", "").strip()[:200]
    return TemplateResponse(request, f"{SPACE}#notes-live", space_context(space, q))


@login_required
@require_POST
def space_edit(request: HttpRequest, space_id: int) -> HttpResponse:
    space = access_memory_space(request.user, space_id)
    form = SpaceSettingsForm(request.POST)
    if form.is_valid():
        try:
            services.space_update(space=space, fields=form.cleaned_data)
        except services.ServiceError as error:
            form.add_error(None, str(error))
        else:
            return go(request, reverse("memory:space", args=[space.pk]))
    space.refresh_from_db()
    template = f"{SPACE}#settings" if htmx(request) else SPACE
    context = space_context(space, settings_form=form)
    return TemplateResponse(request, template, context, status=400)


@login_required
@require_POST
def space_delete(request: HttpRequest, space_id: int) -> HttpResponse:
    space = access_memory_space(request.user, space_id)
    services.space_delete(space=space, user=request.user)
    return go(request, reverse("memory:list"))


@login_required
@require_GET
def space_export(request: HttpRequest, space_id: int) -> HttpResponse:
    return api.export_response(access_memory_space(request.user, space_id))


# Notes ---------------------------------------------------------------------------------


def note_response(
    request: HttpRequest, note: MemoryNote, *, status: int = 200, **extra: Any
) -> HttpResponse:
    """The note's card for htmx, else back to its space."""
    if not htmx(request) and status == 200:
        return redirect("memory:space", note.space_id)
    context = {
        "space": note.space,
        "row": {"note": note, "tokens": note_tokens(note.title, note.body)},
        **extra,
    }
    template = f"{SPACE}#note" if htmx(request) else SPACE
    if not htmx(request):
        context = space_context(note.space, **extra)
    return TemplateResponse(request, template, context, status=shown_status(request, status))


@login_required
@require_POST
def note_new(request: HttpRequest, space_id: int) -> HttpResponse:
    space = access_memory_space(request.user, space_id)
    draft = {"title": posted(request, "title"), "body": posted(request, "body"),
             "pinned": request.POST.get("pinned") == "on"}  # fmt: skip
    try:
        services.note_create(space=space, user=request.user, **draft)
    except services.ServiceError as error:
        context = space_context(space, draft=draft, new_error=str(error))
        if not htmx(request):
            return TemplateResponse(request, SPACE, context, status=error.status)
        response = TemplateResponse(request, f"{SPACE}#new-note", context, status=error.status)
        return reswap(retarget(response, "#new-note"), "outerHTML")  # type: ignore[arg-type]
    if not htmx(request):
        return redirect("memory:space", space.pk)
    context = space_context(space, reset_new=True)
    return TemplateResponse(request, f"{SPACE}#notes-changed", context)


@login_required
@require_GET
def note_card(request: HttpRequest, note_id: int) -> HttpResponse:
    note = access_memory_note(request.user, note_id)
    row = {"note": note, "tokens": note_tokens(note.title, note.body)}
    return TemplateResponse(request, f"{SPACE}#note", {"space": note.space, "row": row})


@login_required
@require_http_methods(["GET", "POST"])
def note_edit(request: HttpRequest, note_id: int) -> HttpResponse:
    note = access_memory_note(request.user, note_id)
    if request.method == "GET":
        draft = {"title": note.title, "body": note.body, "version": note.version}
        return TemplateResponse(request, f"{SPACE}#note-form", {"note": note, "draft": draft})
    draft = {"title": posted(request, "title"), "body": posted(request, "body"),
             "version": posted_version(request)}  # fmt: skip
    try:
        if draft["version"] is None:
            raise services.InvalidInput("Which version did you edit? `version` is missing.")
        saved = services.note_update(note=note, version=draft["version"], title=draft["title"],
                                     body=draft["body"], user=request.user)  # fmt: skip
    except services.Conflict as conflict:
        return note_conflict(request, conflict.note, draft, str(conflict))
    except services.ServiceError as error:
        return note_form_refused(request, note, draft, str(error), error.status)
    return note_response(request, saved)


def note_conflict(
    request: HttpRequest, current: MemoryNote, draft: dict[str, Any], message: str
) -> TemplateResponse:
    """The note as it is now beside the reader's text, with the difference; saving again
    sends the current version, so what the person merged is what is stored."""
    conflict = {
        "note": current,
        "message": message,
        "diff": line_diff(current.body, draft["body"], context=3),
        "title_differs": current.title != draft["title"],
    }
    draft = {**draft, "version": current.version}
    return note_form_refused(request, current, draft, "", 409, conflict=conflict)


def note_form_refused(
    request: HttpRequest, note: MemoryNote, draft: dict[str, Any], error: str, status: int,
    **extra: Any,
) -> TemplateResponse:  # fmt: skip
    context = {"note": note, "draft": draft, "form_error": error, **extra}
    if htmx(request):
        return TemplateResponse(
            request, f"{SPACE}#note-form", context, status=shown_status(request, status)
        )
    context = {**space_context(note.space), "editing": note.pk, **context}
    return TemplateResponse(request, SPACE, context, status=status)


def note_write_refused(
    request: HttpRequest, note: MemoryNote, error: services.ServiceError
) -> HttpResponse:
    """A pin, delete or restore that met a newer note: its card, current, saying so."""
    if isinstance(error, services.NoteGone):
        raise Http404(str(error))
    current = error.note if isinstance(error, services.Conflict) else note
    message = (
        f"Not done: someone changed this note meanwhile (it is now at version {current.version}). "
        "Here it is as it is now."
        if isinstance(error, services.Conflict)
        else str(error)
    )
    response = note_response(
        request, current, status=error.status, card_error=message, card_error_for=current.pk
    )
    if htmx(request):  # a delete targets the list: its refusal replaces only this card
        response = reswap(retarget(response, f"#note-{note.pk}"), "outerHTML")  # type: ignore[arg-type]
    return response


@login_required
@require_POST
def note_pin(request: HttpRequest, note_id: int) -> HttpResponse:
    note = access_memory_note(request.user, note_id)
    try:
        saved = services.note_update(note=note, version=required_version(request),
                                     pinned=request.POST.get("pinned") == "1", user=request.user)  # fmt: skip
    except services.ServiceError as error:
        return note_write_refused(request, note, error)
    return note_response(request, saved)


@login_required
@require_POST
def note_delete(request: HttpRequest, note_id: int) -> HttpResponse:
    note = access_memory_note(request.user, note_id)
    try:
        services.note_delete(note=note, version=required_version(request), user=request.user)
    except services.ServiceError as error:
        return note_write_refused(request, note, error)
    if not htmx(request):
        return redirect("memory:space", note.space_id)
    return TemplateResponse(request, f"{SPACE}#notes-changed", space_context(note.space))


@login_required
@require_GET
def note_history(request: HttpRequest, note_id: int) -> TemplateResponse:
    note = access_memory_note(request.user, note_id)
    revisions = [
        {"revision": revision, "diff": line_diff(revision.body_before, revision.body_after)}
        for revision in revisions_of(note)[:50]
    ]
    return TemplateResponse(request, f"{SPACE}#history", {"note": note, "revisions": revisions})


@login_required
@require_POST
def note_restore(request: HttpRequest, note_id: int, rev: int) -> HttpResponse:
    note = access_memory_note(request.user, note_id)
    revision = revision_of(note, rev)
    try:
        saved = services.note_restore(note=note, number=revision.number,
                                      version=posted_version(request), user=request.user)  # fmt: skip
    except services.ServiceError as error:
        return note_write_refused(request, note, error)
    return note_response(request, saved)


@login_required
@require_POST
def note_preview(request: HttpRequest) -> TemplateResponse:
    """The markdown as a note shows it, rendered by the one sanitising renderer."""
    return TemplateResponse(request, f"{SPACE}#preview", {"text": posted(request, "body")[:50_000]})
