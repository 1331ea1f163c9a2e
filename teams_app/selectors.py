"""Reads about teams, with the access rule every other app builds on."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from django.utils import timezone

from teams_app.models import ApiToken, Team, hash_token


def teams_of(user: Any) -> QuerySet[Team]:
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(membership__user=user).order_by("membership__joined_at", "id")


def team_for_create(user: Any, name: str | None) -> Team:
    """The team a new object goes to: the named one (if the user is in it) or the first."""
    teams = teams_of(user)
    team = teams.filter(name=name).first() if name else teams.first()
    if team is None:
        raise Http404("No such team." if name else "You belong to no team.")
    return team


def user_for_token(token: str) -> Any | None:
    row = ApiToken.objects.select_related("user").filter(digest=hash_token(token)).first()
    if row is None or not row.user.is_active:
        return None
    ApiToken.objects.filter(pk=row.pk).update(last_used_at=timezone.now())
    return row.user
