"""Model-card writes: who may point a card where, and with which credential.

A card's `base_url`, `key` and `api_key_env` decide where the team's conversations and
secrets go, so setting or changing them is an admin's write (`require_admin`), checked
against the operator's outbound rules, and recorded on the card (`endpoint_changed_by`,
`endpoint_changed_at`). Every other field is any member's to change.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from horsie_site import outbound
from sessions_app.models import ModelCard
from sessions_app.services import ServiceError
from teams_app.models import Team
from teams_app.selectors import access_provider_key, require_admin

ENDPOINT_FIELDS = ("base_url", "key", "api_key_env")
MIN_THINKING = 1024  # Anthropic's smallest budget_tokens


class CardRefused(ServiceError):
    status = 422


def model_card_create(*, user: Any, team: Team, fields: dict[str, Any]) -> ModelCard:
    thinking_check(fields, card=None)
    fields = _endpoint_checked(user, team, fields, card=None)
    return ModelCard.objects.create(team=team, **fields)


@transaction.atomic
def model_card_update(*, user: Any, card: ModelCard, fields: dict[str, Any]) -> ModelCard:
    thinking_check(fields, card=card)
    fields = _endpoint_checked(user, card.team, fields, card=card)
    for name, value in fields.items():
        setattr(card, name, value)
    card.save()
    return card


def thinking_check(fields: dict[str, Any], *, card: ModelCard | None) -> None:
    """A thinking budget is Anthropic's, at least its minimum, and below the output limit
    (the thinking counts against it), as the card will be once `fields` are applied."""

    def after(name: str, default: Any) -> Any:
        return fields[name] if name in fields else getattr(card, name, default)

    budget = after("thinking_budget", None)
    if budget is None:
        return
    wire, limit = after("wire", None), after("max_output_tokens", 1024)
    if wire != "anthropic":
        raise CardRefused(
            f"thinking_budget is for the anthropic wire only, not {wire}: leave it empty."
        )
    if budget < MIN_THINKING:
        raise CardRefused(f"thinking_budget must be at least {MIN_THINKING} tokens, not {budget}.")
    if budget >= limit:
        raise CardRefused(
            f"thinking_budget ({budget}) must be below max_output_tokens ({limit}): the "
            "thinking counts against the reply's output limit."
        )


def _endpoint_checked(
    user: Any, team: Team, fields: dict[str, Any], *, card: ModelCard | None
) -> dict[str, Any]:
    """The fields to save, with the key as a row and the change recorded when one was made."""
    changed = [name for name in ENDPOINT_FIELDS if _changes(card, name, fields)]
    if not changed:
        return {name: value for name, value in fields.items() if name != "key"}
    require_admin(user, team)
    checked = dict(fields)
    if fields.get("base_url") is not None:
        _refused_as_422(outbound.check_url, fields["base_url"])
    if fields.get("api_key_env") is not None:
        _refused_as_422(outbound.check_env, fields["api_key_env"], team.name)
    if "key" in fields:
        checked["key"] = _team_key(user, team, fields["key"])
    return {**checked, "endpoint_changed_by": user, "endpoint_changed_at": timezone.now()}


def _changes(card: ModelCard | None, name: str, fields: dict[str, Any]) -> bool:
    if name not in fields:
        return False
    current = None if card is None else getattr(card, "key_id" if name == "key" else name)
    return bool(fields[name] != current)


def _team_key(user: Any, team: Team, key_id: int | None) -> Any:
    if key_id is None:
        return None
    key = access_provider_key(user, key_id)
    if key.team_id != team.pk:
        raise ServiceError(f"Provider key {key_id} belongs to another team.")
    return key


def _refused_as_422(check: Any, *args: Any) -> None:
    try:
        check(*args)
    except outbound.OutboundRefused as error:
        raise CardRefused(str(error)) from None
