"""Teams are walls: every object belongs to one team, and users see only their teams'."""

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


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
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
