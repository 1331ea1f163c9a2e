"""The Skills page: the team's skills (search, create, import, export), bundles, slash
commands and subagent types, and one edit page per object. Every change calls the same
services as the API; a refusal comes back in the form that caused it, with its status.

The four kinds differ only in their form, their services and what an edit starts from, so a
`Kind` says those, and one create, edit and delete view serves them all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.forms import Form
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from sessions_app.selectors import access_session
from skills_app import api, panels, selectors, services
from skills_app.forms import BundleForm, CommandForm, SkillForm, SubagentTypeForm

LIST = "skills_app/list.html"
EDIT = "skills_app/edit.html"
PANEL = "skills_app/_skills_panel.html"


@dataclass(frozen=True, kw_only=True)
class Kind:
    key: str  # the form's prefix on the list page, and the edit page's url name
    title: str
    form: type[Form]
    access: Callable[[Any, Any], Any]
    create: Callable[..., Any]
    update: Callable[[Any, dict[str, Any]], Any]
    delete: Callable[[Any, Any], None]
    initial: Callable[[Any], dict[str, Any]]


def fields_of(item: Any, *names: str) -> dict[str, Any]:
    return {name: getattr(item, name) for name in names}


KINDS = {
    "skill": Kind(
        key="skill", title="skill", form=SkillForm, access=selectors.access_skill,
        create=services.skill_create,
        update=lambda item, fields: services.skill_update(skill=item, fields=fields),
        delete=lambda item, user: services.skill_delete(skill=item, user=user),
        initial=lambda item: {**fields_of(item, "name", "description", "body"),
                              "bundle": item.bundle_id},
    ),
    "bundle": Kind(
        key="bundle", title="bundle", form=BundleForm, access=selectors.access_bundle,
        create=services.bundle_create,
        update=lambda item, fields: services.bundle_update(bundle=item, fields=fields),
        delete=lambda item, user: services.bundle_delete(bundle=item, user=user),
        initial=lambda item: {**fields_of(item, "name", "description"),
                              "skills": [skill.pk for skill in item.skills.all()]},
    ),
    "command": Kind(
        key="command", title="slash command", form=CommandForm, access=selectors.access_command,
        create=services.command_create,
        update=lambda item, fields: services.command_update(command=item, fields=fields),
        delete=lambda item, user: item.delete(),
        initial=lambda item: fields_of(item, "name", "description", "template"),
    ),
    "subagent": Kind(
        key="subagent", title="subagent type", form=SubagentTypeForm,
        access=selectors.access_subagent_type, create=services.subagent_type_create,
        update=lambda item, fields: services.subagent_type_update(item=item, fields=fields),
        delete=lambda item, user: services.subagent_type_delete(item=item, user=user),
        initial=lambda item: {**fields_of(item, "name", "description", "system_prompt"),
                              "model": item.model_id, "tools": ", ".join(item.tools)},
    ),
}  # fmt: skip


def htmx(request: HttpRequest) -> bool:
    return bool(getattr(request, "htmx", False))


def shown_status(request: HttpRequest, status: int) -> int:
    """htmx swaps only 2xx, 400 and 413: other refusals reach it as 200, saying so."""
    return 200 if htmx(request) and status not in (400, 413) else status


def go(request: HttpRequest, url: str) -> HttpResponse:
    return HttpResponseClientRedirect(url) if htmx(request) else redirect(url)


def team_of(request: HttpRequest) -> Any:
    team = request.team  # type: ignore[attr-defined]
    if team is None:
        raise Http404("You belong to no team.")
    return team


ID_PARAMS = {"skill": "skill_id", "bundle": "bundle_id", "command": "command_id",
             "subagent": "type_id"}  # fmt: skip


def kind_of(key: str) -> Kind:
    if key not in KINDS:
        raise Http404("No such kind.")
    return KINDS[key]


def url_of(key: str, action: str, item: Any) -> str:
    return reverse(f"skills:{key}-{action}", kwargs={ID_PARAMS[key]: item.pk})


# The list ------------------------------------------------------------------------------


HEADINGS = {"skill": "Skills", "bundle": "Bundles", "command": "Slash commands",
            "subagent": "Subagent types"}  # fmt: skip


def list_context(
    request: HttpRequest, q: str = "", *, failed: Form | None = None, **extra: Any
) -> dict[str, Any]:
    """The page's sections, one per kind; `failed` is a refused new-object form, shown
    instead of a blank one."""
    team, user = request.team, request.user  # type: ignore[attr-defined]
    items = {
        "skill": selectors.skills_visible(user, team=team, q=q).select_related("bundle"),
        "bundle": selectors.bundles_visible(user, team=team),
        "command": selectors.commands_visible(user, team=team),
        "subagent": selectors.subagent_types_visible(user, team=team).select_related("model"),
    }
    sections = {
        key: {
            "key": key, "title": kind.title, "heading": HEADINGS[key],
            "rows": [{"item": item, "url": url_of(key, "edit", item)} for item in items[key]]
            if team is not None else [],
            "form": failed if failed is not None and failed.prefix == key
            else kind.form(team=team, user=user, prefix=key),
            "new_url": reverse(f"skills:{key}-new"),
        }
        for key, kind in KINDS.items()
    }  # fmt: skip
    others = [sections[key] for key in ("bundle", "command", "subagent")]
    return {"team": team, "q": q, "skills": sections["skill"], "others": others,
            "sections": sections, "built_ins": sorted(services.BUILT_IN_COMMANDS),
            **extra}  # fmt: skip


@login_required
@require_GET
def skill_list(request: HttpRequest) -> TemplateResponse:
    q = request.GET.get("q", "").strip()[:200]
    template = f"{LIST}#skill-list" if htmx(request) and "q" in request.GET else LIST
    return TemplateResponse(request, template, list_context(request, q))


@login_required
@require_POST
def item_new(request: HttpRequest, key: str) -> HttpResponse:
    kind, team = kind_of(key), team_of(request)
    form = kind.form(request.POST, team=team, user=request.user, prefix=key)
    if form.is_valid():
        try:
            kind.create(user=request.user, team=team, fields=form.cleaned_data)
        except services.ServiceError as error:
            form.add_error(None, str(error))
            status = error.status
        else:
            return go(request, f"{reverse('skills:list')}#{key}s")
    else:
        status = 400
    context = list_context(request, failed=form)
    template = f"{LIST}#new-form" if htmx(request) else LIST
    section = context["sections"][key]
    return TemplateResponse(
        request, template, {**context, "section": section}, status=shown_status(request, status)
    )


@login_required
@require_POST
def skill_import(request: HttpRequest) -> HttpResponse:
    team = team_of(request)
    upload = request.FILES.get("file")
    try:
        if upload is None:
            raise services.ImportRefused("Choose a zip of skill folders to import.")
        skills, _ = services.skills_import(
            user=request.user, team=team, upload=(upload.name or "", upload.file, upload.size or 0)
        )
    except services.ServiceError as error:
        template = f"{LIST}#import-form" if htmx(request) else LIST
        context = list_context(request, import_error=str(error))
        return TemplateResponse(
            request, template, context, status=shown_status(request, error.status)
        )
    return go(request, f"{reverse('skills:list')}?imported={len(skills)}")


@login_required
@require_GET
def skill_export(request: HttpRequest) -> HttpResponse:
    team = team_of(request)
    return api.export_response(services.skills_export(team=team), team)


# One object ----------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def item_edit(request: HttpRequest, key: str, **ids: int) -> HttpResponse:
    kind = kind_of(key)
    item = kind.access(request.user, ids[ID_PARAMS[key]])
    make = {"team": item.team, "user": request.user}
    if request.method == "GET":
        form = kind.form(initial=kind.initial(item), **make)
        return TemplateResponse(request, EDIT, edit_context(kind, item, form))
    form = kind.form(request.POST, **make)
    status = 400
    if form.is_valid():
        try:
            kind.update(item, form.cleaned_data)
        except services.ServiceError as error:
            form.add_error(None, str(error))
            status = error.status
        else:
            return go(request, reverse("skills:list"))
    item.refresh_from_db()
    return TemplateResponse(request, EDIT, edit_context(kind, item, form), status=status)


def edit_context(kind: Kind, item: Any, form: Form) -> dict[str, Any]:
    return {"kind": kind, "item": item, "form": form,
            "save_url": url_of(kind.key, "edit", item),
            "delete_url": url_of(kind.key, "delete", item),
            "files": sorted(getattr(item, "files", None) or {})}  # fmt: skip


@login_required
@require_POST
def item_delete(request: HttpRequest, key: str, **ids: int) -> HttpResponse:
    kind = kind_of(key)
    kind.delete(kind.access(request.user, ids[ID_PARAMS[key]]), request.user)
    return go(request, reverse("skills:list"))


@login_required
@require_POST
def session_skills(request: HttpRequest, session_id: int) -> HttpResponse:
    """The session panel's skills form: the same check and notice as `PATCH /sessions/{id}`;
    htmx gets the panel again (with the refusal's words and status, nothing changed)."""
    session = access_session(request.user, session_id)
    error, status = "", 200
    try:
        session = panels.posted_change(session=session, user=request.user, data=request.POST)
    except services.ServiceError as refused:
        error, status = str(refused), refused.status
        session.refresh_from_db()
    if not request.htmx and not error:  # type: ignore[attr-defined]
        return redirect("sessions:detail", session.pk)
    context = panels.skills_panel(session, request.user, error=error)
    return TemplateResponse(request, PANEL, context, status=status)
