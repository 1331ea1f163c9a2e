"""In-process dispatch reads a turn's setup on the thread that committed its input, and hands
it to the runner with the turn: no trip to a thread and back before the first call. A setup
that fails there is the turn's failure, told and released as the runner's own would be."""

from __future__ import annotations

import threading

import pytest

from sessions_app import worker
from sessions_app.models import Session

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_setup_is_read_where_the_input_was_committed(api_for, session, scripted, monkeypatch):
    threads = []
    setup = worker.turn_setup

    def recorded(session_id, lease):
        threads.append(threading.current_thread())
        return setup(session_id, lease)

    monkeypatch.setattr(worker, "turn_setup", recorded)
    answer = api_for("alice").post(f"/sessions/{session.pk}/messages?wait=30", {"text": "hi"})
    assert answer.json()["status"] == "idle"
    assert [e["kind"] for e in answer.json()["entries"]] == ["user", "assistant"]
    assert threads == [threading.current_thread()]  # the test client's request thread


def test_a_setup_that_fails_ahead_is_the_turns_failure(api_for, session, scripted, monkeypatch):
    def broken(session_id, lease):
        raise RuntimeError("the card's wire is not installed")

    monkeypatch.setattr(worker, "turn_setup", broken)
    answer = api_for("alice").post(f"/sessions/{session.pk}/messages?wait=30", {"text": "hi"})
    assert answer.json()["status"] == "idle"
    notice = answer.json()["entries"][-1]
    assert notice["kind"] == "notice" and notice["data"]["code"] == "turn_failed"
    assert "the card's wire is not installed" in notice["content"]
    assert Session.objects.get(pk=session.pk).lease_owner is None
