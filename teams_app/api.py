"""`/api/v1/team/members`, `/team/invitations` and `/provider-keys`.

Each call works on one team: the one named (`team` in the body, or `?team=` when there is no
body) or the user's first. A team the user is not in answers 404 before any role check; a
member asking for an admin's write gets 403 from `require_admin`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from django.http import HttpRequest
from django.urls import reverse
from ninja import Router, Status
from ninja.errors import HttpError

from teams_app import selectors, services
from teams_app.schemas import (
    Detail,
    InvitationIn,
    InvitationOut,
    MemberCreatedOut,
    MemberIn,
    MemberOut,
    ProviderKeyIn,
    ProviderKeyOut,
    RoleIn,
)

router = Router(tags=["teams"])


ERRORS = {400: Detail, 403: Detail, 404: Detail, 409: Detail, 422: Detail}


@contextlib.contextmanager
def refused_as_http() -> Iterator[None]:
    try:
        yield
    except services.TeamError as error:
        raise HttpError(error.status, str(error)) from None


# Members -------------------------------------------------------------------------------


@router.get("/team/members", response={200: list[MemberOut], **ERRORS})
def member_list(request: HttpRequest, team: str | None = None) -> Any:
    return selectors.memberships_of(selectors.team_for_create(request.user, team))


@router.post("/team/members", response={201: MemberCreatedOut, **ERRORS})
def member_create(request: HttpRequest, payload: MemberIn) -> Any:
    team = selectors.team_for_create(request.user, payload.team)
    selectors.require_admin(request.user, team)
    with refused_as_http():
        membership, password = services.member_create(
            team=team, username=payload.username, role=payload.role
        )
    membership.password = password  # type: ignore[attr-defined]  # shown this once
    return Status(201, membership)


@router.patch("/team/members/{user_id}", response={200: MemberOut, **ERRORS})
def member_patch(
    request: HttpRequest, user_id: int, payload: RoleIn, team: str | None = None
) -> Any:
    the_team = selectors.team_for_create(request.user, team)
    membership = selectors.access_membership(request.user, the_team, user_id)
    selectors.require_admin(request.user, the_team)
    with refused_as_http():
        return services.membership_set_role(membership=membership, role=payload.role)


@router.delete("/team/members/{user_id}", response={204: None, **ERRORS})
def member_delete(request: HttpRequest, user_id: int, team: str | None = None) -> Any:
    the_team = selectors.team_for_create(request.user, team)
    membership = selectors.access_membership(request.user, the_team, user_id)
    selectors.require_admin(request.user, the_team)
    with refused_as_http():
        services.membership_remove(membership=membership)
    return Status(204, None)


# Invitations ---------------------------------------------------------------------------


@router.post("/team/invitations", response={201: InvitationOut, **ERRORS})
def invitation_create(request: HttpRequest, payload: InvitationIn) -> Any:
    """A single-use link; only its hash is stored, so it is shown this once."""
    team = selectors.team_for_create(request.user, payload.team)
    selectors.require_admin(request.user, team)
    invitation, token = services.invitation_create(team=team, user=request.user, role=payload.role)
    url = request.build_absolute_uri(reverse("teams:join", args=[token]))
    body = {"url": url, "expires_at": invitation.expires_at, "role": invitation.role}
    return Status(201, {**body, "team": team.name})


# Provider keys -------------------------------------------------------------------------


@router.get("/provider-keys", response={200: list[ProviderKeyOut], **ERRORS})
def provider_key_list(request: HttpRequest, team: str | None = None) -> Any:
    the_team = selectors.team_for_create(request.user, team)
    selectors.require_admin(request.user, the_team)
    return selectors.provider_keys_of(the_team)


@router.post("/provider-keys", response={201: ProviderKeyOut, **ERRORS})
def provider_key_create(request: HttpRequest, payload: ProviderKeyIn) -> Any:
    team = selectors.team_for_create(request.user, payload.team)
    selectors.require_admin(request.user, team)
    with refused_as_http():
        key = services.provider_key_create(
            team=team, user=request.user, name=payload.name, value=payload.value
        )
    return Status(201, key)


@router.delete("/provider-keys/{key_id}", response={204: None, **ERRORS})
def provider_key_delete(request: HttpRequest, key_id: int) -> Any:
    key = selectors.access_provider_key(request.user, key_id)
    selectors.require_admin(request.user, key.team)
    with refused_as_http():
        services.provider_key_delete(key=key)
    return Status(204, None)
