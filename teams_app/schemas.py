"""API shapes for teams: members, invitations, provider keys (whose value never goes out)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema

Role = Literal["admin", "member"]


class Detail(Schema):
    detail: Any


class MemberOut(Schema):
    id: int = Field(alias="user.id")
    username: str = Field(alias="user.username")
    role: Role
    joined_at: datetime
    team: str = Field(alias="team.name")


class MemberIn(Schema):
    """A new account in the team; the response carries its one-time password."""

    username: str = Field(min_length=1, max_length=150, pattern=r"^[\w.@+-]+$")
    role: Role = "member"
    team: str | None = None


class MemberCreatedOut(MemberOut):
    password: str


class RoleIn(Schema):
    role: Role


class InvitationIn(Schema):
    role: Role = "member"
    team: str | None = None


class InvitationOut(Schema):
    url: str
    expires_at: datetime
    role: Role
    team: str


class ProviderKeyIn(Schema):
    name: str = Field(min_length=1, max_length=100)
    value: str = Field(min_length=1, max_length=4096, pattern=r"^[\x21-\x7e]+$")
    team: str | None = None


class ProviderKeyOut(Schema):
    id: int
    name: str
    last4: str
    created_by: str | None
    created_at: datetime
    team: str = Field(alias="team.name")

    @staticmethod
    def resolve_created_by(key: Any) -> str | None:
        return key.created_by.username if key.created_by is not None else None
