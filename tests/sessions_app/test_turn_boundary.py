"""The turn boundary gives the lease back in one statement that holds only while nothing is
queued: input queued at any moment of the release is never left waiting for a next message."""

from __future__ import annotations

import pytest

from sessions_app import services
from sessions_app.leases import lease_take
from sessions_app.models import Entry, QueuedInput, Session

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


def test_a_lost_lease_is_not_released_and_nothing_is_said(session, monkeypatch):
    lease_take(session.pk)
    said = []
    monkeypatch.setattr(services.events, "send_on_commit", lambda *a: said.append(a))
    assert services.turn_boundary(session.pk, "not-the-holder") is None
    assert held(session.pk)[1] == "running"
    assert said == []
