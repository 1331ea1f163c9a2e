"""A model call's view read renews the runner's lease in the same database trip, and a lease
that another runner holds stops the read with `LeaseLost`."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from django.utils import timezone

from harness.ports import LeaseLost
from sessions_app.leases import lease_seconds, lease_take
from sessions_app.models import Session
from sessions_app.stores import OrmTranscriptStore

pytestmark = pytest.mark.django_db(transaction=True)


def expires(session_id: int):
    return Session.objects.values_list("lease_expires_at", flat=True).get(pk=session_id)


def test_the_view_read_renews_the_lease_in_its_own_trip(session):
    lease = lease_take(session.pk)
    assert lease is not None
    Session.objects.filter(pk=session.pk).update(lease_expires_at=timezone.now())
    store = OrmTranscriptStore(lease)
    reads = asyncio.run(store.view_reads(session.pk, None, None, renew=True))
    assert reads is not None
    left = expires(session.pk) - timezone.now()
    assert left > timedelta(seconds=lease_seconds() - 5)


def test_a_lease_held_by_another_runner_stops_the_read(session):
    assert lease_take(session.pk) is not None
    store = OrmTranscriptStore("not-the-holder")
    with pytest.raises(LeaseLost):
        asyncio.run(store.view_reads(session.pk, None, None, renew=True))
    assert asyncio.run(store.view_reads(session.pk, None, None)) is not None  # none asked
