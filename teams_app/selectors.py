"""Reads about teams, with the access rules every other app builds on.

Two rules, each in one place: `teams_of` says what a user may see (anything else answers
404), and `require_admin` says who may make admin-only writes (anyone else gets 403, which
both the API and the pages turn into a 403 response). The 404 check always comes first, so
another team's member learns nothing from a 403.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404
from django.utils import timezone

from horsie_site import compiled
from teams_app.models import (
    ApiToken,
    Invitation,
    Membership,
    OneTimePassword,
    ProviderKey,
    Team,
    hash_token,
)


class RoleRequired(PermissionDenied):
    """Django answers PermissionDenied with 403 on pages; the API has a handler for it."""


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


def role_of(user: Any, team: Team) -> str | None:
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(team=team, user=user).values_list("role", flat=True).first()


def is_admin(user: Any, team: Team) -> bool:
    return role_of(user, team) == "admin"


def require_admin(user: Any, team: Team) -> None:
    """The one role check: every admin-only write, in the API and on pages, goes through it."""
    if not is_admin(user, team):
        raise RoleRequired(f"Only an admin of team {team.name} may do this.")


def access_membership(user: Any, team: Team, member_id: Any) -> Membership:
    """A membership of a team the user is in, by the member's user id."""
    if role_of(user, team) is None:
        raise Http404("No such team.")
    try:
        return Membership.objects.select_related("user").get(team=team, user_id=int(member_id))
    except (ValueError, TypeError, Membership.DoesNotExist):
        raise Http404("No such member.") from None


def memberships_of(team: Team) -> QuerySet[Membership]:
    return Membership.objects.filter(team=team).select_related("user")


def access_provider_key(user: Any, pk: Any) -> ProviderKey:
    try:
        return ProviderKey.objects.select_related("team", "created_by").get(
            pk=int(pk), team__in=teams_of(user)
        )
    except (ValueError, TypeError, ProviderKey.DoesNotExist):
        raise Http404("No such provider key.") from None


def provider_keys_of(team: Team) -> QuerySet[ProviderKey]:
    return ProviderKey.objects.filter(team=team).select_related("created_by")


def invitation_open(token: str) -> Invitation:
    """An invitation that can still be used; a spent, expired or unknown one is a 404 alike."""
    found = (
        Invitation.objects.select_related("team")
        .filter(digest=hash_token(token), used_at__isnull=True, expires_at__gt=timezone.now())
        .first()
    )
    if found is None:
        raise Http404("This invitation link is unknown, used or expired.")
    return found


def must_change_password(user: Any) -> bool:
    """Logged in with a password someone else set: the browser may do nothing else yet."""
    return bool(user.is_authenticated) and OneTimePassword.objects.filter(user=user).exists()


TOKEN_USE_RESOLUTION = timedelta(minutes=1)


@compiled.select(str)
def token_with_user(digest: str) -> QuerySet[ApiToken]:
    return ApiToken.objects.select_related("user").filter(digest=digest).order_by("id")[:1]


def user_for_token(token: str) -> Any | None:
    """The token's user. When it was last used is kept to the minute: a script that calls
    every second does not pay a write per request."""
    rows = token_with_user(hash_token(token))
    row = rows[0] if rows else None
    if row is None or not row.user.is_active:
        return None
    now = timezone.now()
    if row.last_used_at is None or now - row.last_used_at >= TOKEN_USE_RESOLUTION:
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row.user
