"""The Agent presets page: the team's presets, and a form to make, change or delete one.

Writes go through `sessions_app.presets`, the same service as `/api/v1/presets`: the API's
schema checks the fields (`PresetForm.preset_fields`) and the API's selection check refuses a
space, skill, bundle or subagent type the team cannot select, in the API's words, before
anything is written. Any member manages the team's presets (API.md gives presets no role
rule). Deleting a preset leaves the sessions made from it as they are: a session holds its
own copy of every value, and only loses the link (`Session.preset` is SET_NULL).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from memory_app.selectors import spaces_selected
from sessions_app import presets, services
from sessions_app.card_views import current_team, go_to
from sessions_app.forms import PresetForm, selection_refused
from sessions_app.models import AgentPreset, Session
from sessions_app.selectors import access_preset, presets_visible
from skills_app.selectors import bundles_visible, skills_visible, subagent_types_visible
from teams_app.models import Team

LIST = "sessions_app/presets.html"
FORM = "sessions_app/preset_form.html"


@login_required
@require_GET
def preset_list(request: HttpRequest) -> TemplateResponse:
    team = current_team(request)
    rows = presets_visible(request.user).filter(team=team).select_related("model")
    context = {"team": team, "rows": [row_of(request.user, preset) for preset in rows]}
    return TemplateResponse(request, LIST, context)


def row_of(user: Any, preset: AgentPreset) -> dict[str, Any]:
    """What the list says of a preset: its selections by name, and how many sessions use it."""
    team = preset.team_id
    names = {
        "skills": skills_visible(user, team=team).filter(pk__in=preset.skills),
        "bundles": bundles_visible(user, team=team).filter(pk__in=preset.bundles),
        "subagent_types": subagent_types_visible(user, team=team).filter(pk__in=preset.subagent_types),
    }  # fmt: skip
    return {
        "preset": preset,
        "memory": spaces_selected(preset.memory),
        **{name: [item.name for item in rows] for name, rows in names.items()},
        "sessions": Session.objects.filter(preset=preset).count(),
    }


@login_required
@require_http_methods(["GET", "POST"])
def preset_new(request: HttpRequest) -> HttpResponse:
    team = current_team(request)
    form = PresetForm(request.POST or None, user=request.user, team=team)
    if request.method == "POST":
        saved = preset_save(request, form, team=team, preset=None)
        if isinstance(saved, AgentPreset):
            messages.success(request, f"Preset “{saved.name}” added.")
            return redirect("sessions:preset", saved.pk)
        return form_page(request, form, team, None, status=saved)
    return form_page(request, form, team, None)


@login_required
@require_http_methods(["GET", "POST"])
def preset_edit(request: HttpRequest, preset_id: int) -> HttpResponse:
    preset = access_preset(request.user, preset_id)
    form = PresetForm(request.POST or None, user=request.user, team=preset.team, preset=preset)
    if request.method == "POST":
        saved = preset_save(request, form, team=preset.team, preset=preset)
        if isinstance(saved, AgentPreset):
            messages.success(request, f"Preset “{saved.name}” saved.")
            return redirect("sessions:preset", saved.pk)
        return form_page(request, form, preset.team, preset, status=saved)
    return form_page(request, form, preset.team, preset)


def preset_save(
    request: HttpRequest, form: PresetForm, *, team: Team, preset: AgentPreset | None
) -> AgentPreset | int:
    """The saved preset, or the status of the refusal (its error is on the form)."""
    if not form.is_valid():
        return 400
    try:
        fields = form.preset_fields()
        if preset is None:
            return presets.preset_create(user=request.user, team=team, fields=fields)
        return presets.preset_update(user=request.user, preset=preset, fields=fields)
    except forms.ValidationError:
        return 400
    except presets.SelectionInvalid as refused:
        selection_refused(form, refused)
        return refused.status
    except services.ServiceError as error:
        form.add_error(None, str(error))
        return error.status


def form_page(
    request: HttpRequest,
    form: PresetForm,
    team: Team,
    preset: AgentPreset | None,
    status: int = 200,
) -> TemplateResponse:
    used = Session.objects.filter(preset=preset).count() if preset is not None else 0
    context = {"form": form, "preset": preset, "team": team, "used": used}
    return TemplateResponse(request, FORM, context, status=status)


@login_required
@require_POST
def preset_delete(request: HttpRequest, preset_id: int) -> HttpResponse:
    """Sessions made from the preset keep their own values; they only lose the link."""
    preset = access_preset(request.user, preset_id)
    name = preset.name
    preset.delete()
    messages.success(request, f"Preset “{name}” deleted.")
    return go_to(request, reverse("sessions:presets"))
