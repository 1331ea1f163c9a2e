from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from teams_app.models import ApiToken, Membership, Team


@transaction.atomic
def member_ensure(
    *, username: str, team_name: str, password: str | None = None
) -> tuple[Any, Team]:
    """Create the user and the team when missing and make the user a member."""
    user, created = get_user_model().objects.get_or_create(username=username)
    if created or password:
        if password:
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.save()
    team, _ = Team.objects.get_or_create(name=team_name)
    Membership.objects.get_or_create(team=team, user=user)
    return user, team


def token_issue(*, user: Any, name: str = "") -> str:
    _, token = ApiToken.issue(user, name)
    return token
