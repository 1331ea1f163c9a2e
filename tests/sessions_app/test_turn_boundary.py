"""The turn boundary gives the lease back in one statement that holds only while nothing is
queued: input queued at any moment of the release is never left waiting for a next message.
A turn's last reply reaches the boundary on its own database trip."""

from __future__ import annotations

import asyncio

import pytest

from sessions_app import services, stores
from sessions_app.leases import lease_take
from sessions_app.models import Entry, QueuedInput, Session
from sessions_app.stores import OrmTranscriptStore

pytestmark = pytest.mark.django_db(transaction=True)


def held(session_id: int) -> tuple[str | None, str]:
    row = Session.objects.values_list("lease_owner", "status").get(pk=session_id)
    return row[0], row[1]


def test_with_nothing_queued_the_session_is_released_idle(session):
    lease = lease_take(session.pk)
    assert services.turn_boundary(session.pk, lease) is None
    assert held(session.pk) == (None, "idle")


def test_input_queued_while_releasing_keeps_the_lease_and_enters_the_log(
    session, personas, monkeypatch
):
    """Queued after the boundary looked at its state and before its release statement: the
    statement sees it, so the lease stays and the input enters the log at once."""
    lease = lease_take(session.pk)
    alice = personas["alice"][0]
    state_now = services.state_now

    def queued_meanwhile(session_id):
        state = state_now(session_id)
        QueuedInput.objects.create(session_id=session_id, text="one more thing", author=alice)
        return state

    monkeypatch.setattr(services, "state_now", queued_meanwhile)
    assert services.turn_boundary(session.pk, lease) == lease
    assert held(session.pk) == (lease, "running")
    last = Entry.objects.filter(session=session).order_by("-seq").first()
    assert (last.kind, last.content) == ("user", "one more thing")
    assert not QueuedInput.objects.filter(session=session).exists()


def test_input_queued_after_the_release_finds_the_lease_free(session, personas):
    lease = lease_take(session.pk)
    assert services.turn_boundary(session.pk, lease) is None
    assert lease_take(session.pk) is not None  # the poster's own turn


def test_input_posted_while_the_runner_releases_is_never_left_queued(
    session, personas, monkeypatch
):
    """The poster finds the lease held, and the runner releases it (nothing queued yet)
    before the input is queued: the poster then takes the free lease and runs the turn."""
    runner = lease_take(session.pk)
    alice = personas["alice"][0]
    real_take = services.lease_take
    dispatched = []
    monkeypatch.setattr(
        "sessions_app.dispatcher.turn_dispatch", lambda sid, lease: dispatched.append(lease)
    )

    def held_then_released(session_id):
        taken = real_take(session_id)
        assert taken is None  # the runner still holds it ...
        assert services.turn_boundary(session_id, runner) is None  # ... and now it does not
        monkeypatch.setattr(services, "lease_take", real_take)
        return taken

    monkeypatch.setattr(services, "lease_take", held_then_released)
    posted = services.message_post(session=session, user=alice, text="are you there?")
    assert posted.lease is not None and dispatched == [posted.lease]
    assert held(session.pk) == (posted.lease, "running")
    last = Entry.objects.filter(session=session).order_by("-seq").first()
    assert (last.kind, last.content) == ("user", "are you there?")
    assert not QueuedInput.objects.filter(session=session).exists()


def test_a_lost_lease_is_not_released_and_nothing_is_said(session, monkeypatch):
    lease_take(session.pk)
    said = []
    monkeypatch.setattr(services.events, "send_on_commit", lambda *a: said.append(a))
    assert services.turn_boundary(session.pk, "not-the-holder") is None
    assert held(session.pk)[1] == "running"
    assert said == []


def test_the_last_reply_and_the_boundary_take_one_trip(session, monkeypatch):
    lease = lease_take(session.pk)
    store = OrmTranscriptStore(lease)
    asyncio.run(store.append_last(session.pk, kind="assistant", content="Done."))
    assert held(session.pk) == (None, "idle")  # released with the reply
    again = []
    monkeypatch.setattr(stores, "turn_boundary", lambda *args: again.append(args))
    assert asyncio.run(store.next_turn(session.pk)) is False
    assert again == []  # the boundary was reached already, on the reply's trip


def test_input_queued_before_the_last_reply_runs_next(session, personas):
    lease = lease_take(session.pk)
    store = OrmTranscriptStore(lease)
    QueuedInput.objects.create(session=session, text="and then?", author=personas["alice"][0])
    asyncio.run(store.append_last(session.pk, kind="assistant", content="Done."))
    assert asyncio.run(store.next_turn(session.pk)) is True
    assert held(session.pk) == (lease, "running")
    kinds = list(Entry.objects.filter(session=session).values_list("kind", flat=True))
    assert kinds[-2:] == ["assistant", "user"]


def test_a_boundary_that_fails_keeps_the_reply_and_fails_the_next_turn(session, monkeypatch):
    lease = lease_take(session.pk)
    store = OrmTranscriptStore(lease)

    def broken(session_id, lease):
        raise RuntimeError("the boundary broke")

    monkeypatch.setattr(stores, "turn_boundary", broken)
    entry = asyncio.run(store.append_last(session.pk, kind="assistant", content="Done."))
    assert Entry.objects.filter(session=session, seq=entry.seq, content="Done.").exists()
    with pytest.raises(RuntimeError, match="the boundary broke"):
        asyncio.run(store.next_turn(session.pk))
