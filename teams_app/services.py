"""Changes to teams: members and roles, invitations, provider keys, tokens.

Role checks are the callers' (`selectors.require_admin`, before a service runs); the rules
here are the team's own invariants: the first member is its admin, a team never ends with no
admin, an invitation is spent once, a provider key is stored only encrypted.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from teams_app import vault
from teams_app.models import (
    ApiToken,
    Invitation,
    Membership,
    OneTimePassword,
    ProviderKey,
    Team,
    hash_token,
)

INVITATION_LIFETIME = timedelta(days=7)


class TeamError(ValueError):
    """A change the team's rules refuse; `status` is its HTTP code."""

    status = 409


def password_new() -> str:
    return secrets.token_urlsafe(12)


def password_one_time(*, user: Any) -> str:
    """A new password someone else will read: the user must change it at first login."""
    password = password_new()
    user.set_password(password)
    user.save(update_fields=["password"])
    OneTimePassword.objects.get_or_create(user=user)
    return password


def password_changed(*, user: Any) -> None:
    OneTimePassword.objects.filter(user=user).delete()


@transaction.atomic
def member_ensure(
    *, username: str, team_name: str, password: str | None = None, admin: bool = False
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
    membership_add(team=team, user=user, role="admin" if admin else "member")
    return user, team


def membership_add(*, team: Team, user: Any, role: str) -> Membership:
    """Join (or stay in) a team. The first member is its admin; a join never demotes."""
    locked = Team.objects.select_for_update().get(pk=team.pk)
    first = not Membership.objects.filter(team=locked).exists()
    membership, _ = Membership.objects.get_or_create(team=locked, user=user)
    if (first or role == "admin") and membership.role != "admin":
        membership.role = "admin"
        membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def member_create(*, team: Team, username: str, role: str) -> tuple[Membership, str]:
    """A new account in the team with a one-time password, shown once to the admin."""
    User = get_user_model()
    if User.objects.filter(username=username).exists():
        raise TeamError(
            f"The username {username} is taken; invite an existing user with a link instead."
        )
    user = User.objects.create_user(username=username)
    password = password_one_time(user=user)
    return membership_add(team=team, user=user, role=role), password


def _admins_left(membership: Membership) -> int:
    """Other admins of the team, with the team's row locked so two changes cannot race."""
    Team.objects.select_for_update().get(pk=membership.team_id)
    others = Membership.objects.filter(team_id=membership.team_id, role="admin")
    return others.exclude(pk=membership.pk).count()


@transaction.atomic
def membership_set_role(*, membership: Membership, role: str) -> Membership:
    if role != "admin" and membership.role == "admin" and not _admins_left(membership):
        raise TeamError("A team needs an admin: make someone else admin first.")
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership) -> None:
    if membership.role == "admin" and not _admins_left(membership):
        raise TeamError("A team needs an admin: make someone else admin first.")
    membership.delete()


def invitation_create(*, team: Team, user: Any, role: str = "member") -> tuple[Invitation, str]:
    token = "inv_" + secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        team=team,
        role=role,
        digest=hash_token(token),
        created_by=user,
        expires_at=timezone.now() + INVITATION_LIFETIME,
    )
    return invitation, token


@transaction.atomic
def invitation_accept(*, invitation: Invitation, user: Any) -> Membership:
    """Spend the invitation and join its team. The conditional update makes it single use
    even when two people follow the same link at once."""
    now = timezone.now()
    spent = Invitation.objects.filter(
        pk=invitation.pk, used_at__isnull=True, expires_at__gt=now
    ).update(used_at=now, used_by=user)
    if not spent:
        raise TeamError("This invitation link is used or expired.")
    return membership_add(team=invitation.team, user=user, role=invitation.role)


@transaction.atomic
def invitation_signup(*, invitation: Invitation, username: str, password: str) -> Any:
    """A new account made through an invitation, in its team."""
    User = get_user_model()
    if User.objects.filter(username=username).exists():
        raise TeamError(f"The username {username} is taken; log in first to join as that user.")
    user = User.objects.create_user(username=username, password=password)
    invitation_accept(invitation=invitation, user=user)
    return user


def provider_key_create(*, team: Team, user: Any, name: str, value: str) -> ProviderKey:
    last4 = value[-4:] if len(value) >= 12 else ""
    try:
        with transaction.atomic():
            return ProviderKey.objects.create(
                team=team, name=name, ciphertext=vault.encrypt(value), last4=last4, created_by=user
            )
    except IntegrityError:
        raise TeamError(f"Team {team.name} already has a provider key named {name}.") from None


def provider_key_delete(*, key: ProviderKey) -> None:
    from django.db.models import ProtectedError

    try:
        key.delete()
    except ProtectedError:
        raise TeamError("Model cards still use this provider key.") from None


@transaction.atomic
def user_with_password(*, username: str, team_name: str, admin: bool) -> tuple[Any, Team, str]:
    """For `horsie_user`: the user logs in once with the returned password, then sets one."""
    user, team = member_ensure(username=username, team_name=team_name, admin=admin)
    return user, team, password_one_time(user=user)


def token_issue(*, user: Any, name: str = "") -> str:
    _, token = ApiToken.issue(user, name)
    return token
