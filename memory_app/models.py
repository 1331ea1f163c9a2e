"""Memory spaces, their notes, and a revision for every change to a note.

A note carries a `version`, bumped by every change; a write names the version it read and
is refused when the note has moved on (see `services`), so two people editing one note
never overwrite each other. Every change leaves a `MemoryRevision` with the text before and
after and who made it: a person (`user`) or an agent (`session` and the entry `seq` of the
tool call). Revisions outlive their note (`note` becomes null), so a deletion stays on record.

A personal space is its owner's alone: teammates see nothing of it (404). Names are unique
among a team's shared spaces and among one owner's personal spaces, never across the two,
so a teammate's personal space cannot be detected by a refused name.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from teams_app.models import Team


class MemorySpace(models.Model):
    SCOPES = [("team", "team"), ("personal", "personal")]

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memory_spaces")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    scope = models.CharField(max_length=10, choices=SCOPES, default="team")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True,
        related_name="personal_memory_spaces",
    )  # fmt: skip
    budget_tokens = models.PositiveIntegerField(default=2000)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
        related_name="+",
    )  # fmt: skip
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["team", "name"], condition=Q(scope="team"), name="one_team_space_name"
            ),
            models.UniqueConstraint(
                fields=["team", "owner", "name"],
                condition=Q(scope="personal"),
                name="one_personal_space_name",
            ),
            models.CheckConstraint(
                condition=Q(scope="team", owner__isnull=True)
                | Q(scope="personal", owner__isnull=False),
                name="personal_has_owner",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class MemoryNote(models.Model):
    space = models.ForeignKey(MemorySpace, on_delete=models.CASCADE, related_name="notes")
    title = models.CharField(max_length=200)
    body = models.TextField(blank=True)
    pinned = models.BooleanField(default=False)
    version = models.PositiveIntegerField(default=1)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
        related_name="+",
    )  # fmt: skip
    # An agent's write: its session and the seq of the entry that made it.
    updated_by_session = models.ForeignKey(
        "sessions_app.Session", on_delete=models.SET_NULL, null=True, blank=True,
        related_name="+",
    )  # fmt: skip
    updated_by_seq = models.PositiveBigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-pinned", "-updated_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["space", "title"], name="one_note_title"),
        ]

    def __str__(self) -> str:
        return self.title


class MemoryRevision(models.Model):
    ACTIONS = [(a, a) for a in ("create", "update", "rename", "pin", "unpin", "delete", "restore")]

    space = models.ForeignKey(MemorySpace, on_delete=models.CASCADE, related_name="revisions")
    note = models.ForeignKey(
        MemoryNote, on_delete=models.SET_NULL, null=True, blank=True, related_name="revisions"
    )
    number = models.PositiveIntegerField()  # the note's version this change made
    action = models.CharField(max_length=10, choices=ACTIONS)
    title_before = models.CharField(max_length=200, blank=True)
    title_after = models.CharField(max_length=200, blank=True)
    body_before = models.TextField(blank=True)
    body_after = models.TextField(blank=True)
    pinned_after = models.BooleanField(default=False)
    restored_from = models.PositiveIntegerField(null=True, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
        related_name="+",
    )  # fmt: skip
    session = models.ForeignKey(
        "sessions_app.Session", on_delete=models.SET_NULL, null=True, blank=True,
        related_name="+",
    )  # fmt: skip
    seq = models.PositiveBigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["note", "-number"])]

    def __str__(self) -> str:
        return f"{self.title_after or self.title_before} v{self.number} {self.action}"
