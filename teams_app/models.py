"""Teams are walls: every object belongs to one team, and users see only their teams'.

Inside a team, a membership is `admin` or `member`; the first member of a team is its admin
and a team never ends with none. Secrets are stored so a copy of the database gives nothing
away: API tokens and invitation tokens as hashes, provider keys encrypted (`vault`).
"""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models


class Team(models.Model):
    name = models.CharField(max_length=100, unique=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="teams"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


ROLES = [("admin", "admin"), ("member", "member")]


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    role = models.CharField(max_length=10, choices=ROLES, default="member")
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="one_membership")]
        ordering = ["joined_at", "id"]

    def __str__(self) -> str:
        return f"{self.user} in {self.team}"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ApiToken(models.Model):
    """Only the token's hash is stored; the token itself is shown once, when created."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    name = models.CharField(max_length=100, blank=True)
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=8)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @classmethod
    def issue(cls, user: models.Model, name: str = "") -> tuple[ApiToken, str]:
        token = "hrs_" + secrets.token_urlsafe(32)
        row = cls.objects.create(user=user, name=name, digest=hash_token(token), prefix=token[:8])
        return row, token


class OneTimePassword(models.Model):
    """The user's password was set by someone else (`horsie_user`, an admin adding a member)
    and must be changed before anything else is done in the browser."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True,
        related_name="one_time_password",
    )  # fmt: skip
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"one-time password of {self.user}"


class ProviderKey(models.Model):
    """A team's credential for a provider. Only the Fernet token is stored; the value goes
    out only to the model card's provider and is never shown back (`last4` is)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="provider_keys")
    name = models.CharField(max_length=100)
    ciphertext = models.TextField()
    last4 = models.CharField(max_length=4, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="one_key_name")]
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.team})"


class Invitation(models.Model):
    """A one-time link into a team. Only the token's hash is kept; `used_at` spends it."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(max_length=10, choices=ROLES, default="member")
    digest = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
        related_name="+",
    )  # fmt: skip

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"invitation to {self.team} ({self.role})"
