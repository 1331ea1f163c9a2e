"""The Models page: the team's model cards, a form per wire, and "Test connection".

Writes go through `sessions_app.cards`, the same service as `/api/v1/models`, so the same
rules hold: the API's schema checks the fields (`ModelCardForm.card_fields`), and a card's
endpoint (base URL, provider key) is an admin's to set. A member sees the endpoint read-only
and the form does not send it; a member who sends it anyway gets the service's 403. A
provider key is offered by name and last four characters, never by value.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import ProtectedError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from sessions_app import cards, probe, services, usage
from sessions_app.forms import WIRE_HINTS, ModelCardForm, card_initial
from sessions_app.models import WIRES, ModelCard
from sessions_app.selectors import access_model_card, model_cards_visible
from teams_app.models import Team
from teams_app.selectors import is_admin, provider_keys_of

LIST = "sessions_app/models.html"
FORM = "sessions_app/model_form.html"


def current_team(request: HttpRequest) -> Team:
    team: Team | None = request.team  # type: ignore[attr-defined]
    if team is None:
        raise Http404("You belong to no team.")
    return team


@login_required
@require_GET
def card_list(request: HttpRequest) -> TemplateResponse:
    team = current_team(request)
    spent = usage.team_usage(team)
    by_card = {row["model"]: row for row in spent["models"]}
    cards_ = model_cards_visible(request.user, team=team).select_related("key")
    context = {
        "team": team,
        "rows": [row_of(card, by_card.get(card.pk)) for card in cards_],
        "wires": WIRES,
        "hints": WIRE_HINTS,
        "is_admin": is_admin(request.user, team),
        "usage": spent,
    }
    return TemplateResponse(request, LIST, context)


def row_of(card: ModelCard, spent: dict[str, Any] | None) -> tuple[Any, ...]:
    return card, spent, usage.overall({k: spent[k] for k in usage.SIDES}) if spent else None


@login_required
@require_http_methods(["GET", "POST"])
def card_new(request: HttpRequest) -> HttpResponse:
    team = current_team(request)
    wire = request.GET.get("wire") if request.GET.get("wire") in WIRE_HINTS else "openai_chat"
    form = ModelCardForm(request.POST or None, keys=provider_keys_of(team), initial={"wire": wire})
    if request.method == "POST":
        saved = card_save(request, form, team=team, card=None)
        if isinstance(saved, ModelCard):
            messages.success(request, f"Model card “{saved.name}” added.")
            return redirect("sessions:model", saved.pk)
        return form_page(request, form, team, None, status=saved)
    return form_page(request, form, team, None)


@login_required
@require_http_methods(["GET", "POST"])
def card_edit(request: HttpRequest, card_id: int) -> HttpResponse:
    card = access_model_card(request.user, card_id)
    form = ModelCardForm(
        request.POST or None, keys=provider_keys_of(card.team), initial=card_initial(card)
    )
    if request.method == "POST":
        saved = card_save(request, form, team=card.team, card=card)
        if isinstance(saved, ModelCard):
            messages.success(request, f"Model card “{saved.name}” saved.")
            return redirect("sessions:model", saved.pk)
        return form_page(request, form, card.team, card, status=saved)
    return form_page(request, form, card.team, card)


def card_save(
    request: HttpRequest, form: ModelCardForm, *, team: Team, card: ModelCard | None
) -> ModelCard | int:
    """The saved card, or the status of the refusal (its error is on the form)."""
    if not form.is_valid():
        return 400
    try:
        fields = form.card_fields(sent=request.POST)
        if card is None:
            return cards.model_card_create(user=request.user, team=team, fields=fields)
        return cards.model_card_update(user=request.user, card=card, fields=fields)
    except forms.ValidationError as error:
        form.add_error(None, error)
        return 400
    except PermissionDenied as error:
        form.add_error(None, f"{error} (a card's base URL and provider key are set by admins)")
        return 403
    except services.ServiceError as error:
        form.add_error(None, str(error))
        return error.status


def form_page(
    request: HttpRequest,
    form: ModelCardForm,
    team: Team,
    card: ModelCard | None,
    status: int = 200,
    result: probe.ProbeResult | None = None,
) -> TemplateResponse:
    wire = form["wire"].value() or "openai_chat"
    context = {
        "form": form,
        "card": card,
        "team": team,
        "is_admin": is_admin(request.user, team),
        "wires": WIRES,
        "hint": WIRE_HINTS.get(str(wire), WIRE_HINTS["openai_chat"]),
        "hints": WIRE_HINTS,
        "result": result,
    }
    return TemplateResponse(request, FORM, context, status=status)


@login_required
@require_POST
def card_delete(request: HttpRequest, card_id: int) -> HttpResponse:
    card = access_model_card(request.user, card_id)
    try:
        card.delete()
    except ProtectedError:
        messages.error(request, f"Sessions or presets still use “{card.name}”: it stays.")
        return go_to(request, reverse("sessions:model", args=[card.pk]))
    messages.success(request, f"Model card “{card.name}” deleted.")
    return go_to(request, reverse("sessions:models"))


def go_to(request: HttpRequest, url: str) -> HttpResponse:
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)  # type: ignore[attr-defined]


@login_required
@require_POST
def card_test(request: HttpRequest, card_id: int) -> TemplateResponse:
    """One tiny call through the card: for htmx the result alone, else the card's page."""
    card = access_model_card(request.user, card_id)
    result = probe.card_probe(card)
    if request.htmx:  # type: ignore[attr-defined]
        return TemplateResponse(request, f"{FORM}#probe-result", {"card": card, "result": result})
    form = ModelCardForm(keys=provider_keys_of(card.team), initial=card_initial(card))
    return form_page(request, form, card.team, card, result=result)
