"""The turn lease: one turn at a time per session, held in the database with an expiry.

Taking the lease is one conditional UPDATE, atomic on SQLite and PostgreSQL alike: it
succeeds only when nobody holds it or the holder's lease has expired (a crashed worker). The
holder renews it while it works; losing it means another runner has taken the session over.
Taking a free lease and taking over an expired one are separate updates, so the taker knows
exactly whether it inherits an interrupted turn.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from sessions_app.models import QueuedInput, Session


def lease_seconds() -> int:
    return int(settings.HORSIE["LEASE_SECONDS"])


def lease_take(session_id: int) -> str | None:
    """Take the lease if it is free; the caller then owns the session's turn."""
    return lease_grab(session_id, Q(lease_owner__isnull=True))


def lease_take_over(session_id: int) -> str | None:
    """Take the lease from a runner whose lease expired (it died, or hung past renewing)."""
    return lease_grab(session_id, Q(lease_owner__isnull=False, lease_expires_at__lt=timezone.now()))


def lease_grab(session_id: int, free: Q) -> str | None:
    now = timezone.now()
    token = secrets.token_hex(16)
    taken = (
        Session.objects.filter(pk=session_id)
        .filter(free)
        .update(
            lease_owner=token,
            lease_expires_at=now + timedelta(seconds=lease_seconds()),
            status="running",
            updated_at=now,
        )
    )
    return token if taken else None


def lease_renew(session_id: int, token: str) -> bool:
    expires = timezone.now() + timedelta(seconds=lease_seconds())
    return bool(
        Session.objects.filter(pk=session_id, lease_owner=token).update(lease_expires_at=expires)
    )


def lease_release(
    session_id: int, token: str, status: str = "idle", *, unless_queued: bool = False
) -> bool:
    """Give the lease back; the session becomes idle, or waiting on a question. With
    `unless_queued`, only while no input is queued for the session, in the same statement:
    input queued before it keeps the lease with its holder, and input queued after it finds
    the lease free for its poster to take."""
    held = Session.objects.filter(pk=session_id, lease_owner=token)
    if unless_queued:
        held = held.filter(~Exists(QueuedInput.objects.filter(session_id=OuterRef("pk"))))
    return bool(
        held.update(
            lease_owner=None, lease_expires_at=None, status=status, updated_at=timezone.now()
        )
    )


def lease_is_live(session: Session) -> bool:
    expires = session.lease_expires_at
    return session.lease_owner is not None and expires is not None and expires >= timezone.now()


def status_of(session: Session) -> str:
    """The status to show: a `running` whose runner died (lease expired) is idle again."""
    if session.status == "running" and not lease_is_live(session):
        return "idle"
    return session.status
