"""API shapes for memory spaces, notes and revisions (`XIn` / `XOut`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema

from sessions_app.schemas import Patch

Budget = Field(ge=1, le=1_000_000)


class SpaceIn(Schema):
    name: str = Field(min_length=1, max_length=100)
    description: str = Field(default="", max_length=2000)
    scope: Literal["team", "personal"] = "team"
    budget_tokens: int = Field(default=2000, ge=1, le=1_000_000)
    team: str | None = None


class SpacePatch(Patch):
    name: str | None = Field(default=None, min_length=1, max_length=100)
    description: str | None = Field(default=None, max_length=2000)
    budget_tokens: int | None = Field(default=None, ge=1, le=1_000_000)


class SpaceOut(Schema):
    id: int
    name: str
    description: str
    scope: str
    budget_tokens: int
    team: str = Field(alias="team.name")
    owner: str | None
    created_at: datetime

    @staticmethod
    def resolve_owner(space: Any) -> str | None:
        return space.owner.username if space.owner_id else None


class NoteIn(Schema):
    title: str = Field(min_length=1, max_length=200)
    body: str = ""
    pinned: bool = False


class NotePatch(Patch):
    version: int = Field(ge=1, le=2**31 - 1)
    title: str | None = Field(default=None, min_length=1, max_length=200)
    body: str | None = None
    pinned: bool | None = None


class VersionIn(Schema):
    version: int = Field(ge=1, le=2**31 - 1)


class RestoreIn(Schema):
    version: int | None = Field(default=None, ge=1, le=2**31 - 1)


class NoteOut(Schema):
    id: int
    space: int = Field(alias="space_id")
    title: str
    body: str
    pinned: bool
    version: int
    updated_by: str | None
    updated_by_session: int | None = Field(alias="updated_by_session_id")
    updated_by_seq: int | None
    updated_at: datetime

    @staticmethod
    def resolve_updated_by(note: Any) -> str | None:
        return note.updated_by.username if note.updated_by_id and note.updated_by else None


class ConflictOut(Schema):
    detail: str
    note: NoteOut


class RevisionOut(Schema):
    number: int
    action: str
    title_before: str
    title_after: str
    body_before: str
    body_after: str
    pinned: bool = Field(alias="pinned_after")
    restored_from: int | None
    user: str | None
    session: int | None = Field(alias="session_id")
    seq: int | None
    created_at: datetime

    @staticmethod
    def resolve_user(revision: Any) -> str | None:
        return revision.user.username if revision.user_id and revision.user else None


class ImportOut(Schema):
    space: SpaceOut
    notes: list[str]
