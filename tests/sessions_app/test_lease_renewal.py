"""A model call's view read renews the runner's lease in the same database trip when less
than two thirds of it are surely left, and a lease that another runner holds stops the read
(or the runner's setup) with `LeaseLost`."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from harness.ports import LeaseLost
from sessions_app.leases import lease_seconds, lease_take
from sessions_app.models import Session
from sessions_app.stores import OrmTranscriptStore
from sessions_app.worker import turn_setup

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


def test_a_lease_renewed_a_moment_ago_is_not_renewed_again_by_the_next_call(session):
    lease = lease_take(session.pk)
    store = OrmTranscriptStore(lease)
    asyncio.run(store.view_reads(session.pk, None, None, renew=True))
    Session.objects.filter(pk=session.pk).update(lease_expires_at=timezone.now())
    asyncio.run(store.view_reads(session.pk, None, None, renew=True))
    assert expires(session.pk) - timezone.now() < timedelta(seconds=1)  # no write
    store.held_until = time.monotonic() + lease_seconds() / 2  # a third of it went by
    asyncio.run(store.view_reads(session.pk, None, None, renew=True))
    assert expires(session.pk) - timezone.now() > timedelta(seconds=lease_seconds() - 5)


def test_the_setup_refuses_a_lease_that_is_no_longer_held(session):
    lease = lease_take(session.pk)
    Session.objects.filter(pk=session.pk).update(lease_owner="a-later-runner")
    with pytest.raises(LeaseLost):
        turn_setup(session.pk, lease)


def test_the_setup_reads_the_first_view_and_an_append_makes_it_stale(session):
    lease = lease_take(session.pk)
    store = OrmTranscriptStore(lease)
    store.read_ahead(Session.objects.get(pk=session.pk))  # as the setup does
    asyncio.run(store.append(session.pk, kind="user", content="after the setup"))
    reads = asyncio.run(store.view_reads(session.pk, None, None, renew=True))
    assert [e.content for e in reads.entries][-1:] == ["after the setup"]
    assert reads.state.seq == Session.objects.get(pk=session.pk).last_seq
