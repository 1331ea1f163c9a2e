"""The turn lease: one turn at a time per session, held in the database with an expiry.

Taking the lease is one conditional UPDATE, atomic on SQLite and PostgreSQL alike: it
succeeds only when nobody holds it or the holder's lease has expired (a crashed worker). The
holder renews it while it works; losing it means another runner has taken the session over.
Taking a free lease and taking over an expired one are separate updates, so the taker knows
exactly whether it inherits an interrupted turn.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from horsie_site import compiled
from sessions_app.models import QueuedInput, Session


def lease_seconds() -> int:
    return int(settings.HORSIE["LEASE_SECONDS"])


def lease_take(session_id: int) -> str | None:
    """Take the lease if it is free; the caller then owns the session's turn."""
    return lease_granted(take_free, session_id)


def lease_take_over(session_id: int) -> str | None:
    """Take the lease from a runner whose lease expired (it died, or hung past renewing)."""
    return lease_granted(take_expired, session_id)


def lease_granted(
    grab: compiled.Update[[str, datetime, datetime, int]], session_id: int
) -> str | None:
    now = timezone.now()
    token = secrets.token_hex(16)
    taken = grab(token, now + timedelta(seconds=lease_seconds()), now, session_id)
    return token if taken else None


def grabbed(free: Q, token: str, expires: datetime, now: datetime, session_id: int) -> Grab:
    taken = {
        "lease_owner": token,
        "lease_expires_at": expires,
        "status": "running",
        "updated_at": now,
    }
    return Session.objects.filter(free, pk=session_id), taken


Grab = tuple[QuerySet[Session], dict[str, Any]]


@compiled.update(str, datetime, datetime, int)
def take_free(token: str, expires: datetime, now: datetime, session_id: int) -> Grab:
    return grabbed(Q(lease_owner__isnull=True), token, expires, now, session_id)


@compiled.update(str, datetime, datetime, int)
def take_expired(token: str, expires: datetime, now: datetime, session_id: int) -> Grab:
    expired = Q(lease_owner__isnull=False, lease_expires_at__lt=now)
    return grabbed(expired, token, expires, now, session_id)


def lease_renew(session_id: int, token: str) -> bool:
    return bool(renew(timezone.now() + timedelta(seconds=lease_seconds()), session_id, token))


@compiled.update(datetime, int, str)
def renew(expires: datetime, session_id: int, token: str) -> Grab:
    return Session.objects.filter(pk=session_id, lease_owner=token), {"lease_expires_at": expires}


def lease_release(
    session_id: int, token: str, status: str = "idle", *, unless_queued: bool = False
) -> bool:
    """Give the lease back; the session becomes idle, or waiting on a question. With
    `unless_queued`, only while no input is queued for the session, in the same statement:
    input queued before it keeps the lease with its holder, and input queued after it finds
    the lease free for its poster to take."""
    release = release_unless_queued if unless_queued else release_held
    return bool(release(status, timezone.now(), session_id, token))


def released(status: str, now: datetime, session_id: int, token: str) -> Grab:
    values = {"lease_owner": None, "lease_expires_at": None, "status": status, "updated_at": now}
    return Session.objects.filter(pk=session_id, lease_owner=token), values


@compiled.update(str, datetime, int, str)
def release_held(status: str, now: datetime, session_id: int, token: str) -> Grab:
    return released(status, now, session_id, token)


@compiled.update(str, datetime, int, str)
def release_unless_queued(status: str, now: datetime, session_id: int, token: str) -> Grab:
    held, values = released(status, now, session_id, token)
    queued = QueuedInput.objects.filter(session_id=OuterRef("pk"))
    return held.filter(~Exists(queued)), values


def lease_is_live(session: Session) -> bool:
    expires = session.lease_expires_at
    return session.lease_owner is not None and expires is not None and expires >= timezone.now()


def status_of(session: Session) -> str:
    """The status to show: a `running` whose runner died (lease expired) is idle again."""
    if session.status == "running" and not lease_is_live(session):
        return "idle"
    return session.status
