"""Reading the state on from a known one: exactly what loading it whole gives, at every seq."""

from __future__ import annotations

import json

import pytest

from harness.state import serialise
from harness.testing import reply
from sessions_app.journal import state_after, state_load

pytestmark = pytest.mark.django_db(transaction=True)


def call(name: str, arguments: object, call_id: str) -> tuple[str, str, str]:
    return (call_id, name, json.dumps(arguments))


def test_reading_on_from_any_earlier_state_gives_the_whole_fold(
    api_for, session, scripted, settings
):
    settings.HORSIE = {**settings.HORSIE, "SNAPSHOT_EVERY": 3}
    tasks = [{"text": "one", "status": "pending"}]
    timer = {"seconds": 600, "message": "Check."}
    scripted.steps = [
        reply("", call("todo_write", {"tasks": tasks}, "c1")),
        reply("", call("set_timer", timer, "c2")),
        reply("Listed and armed."),
    ]
    api = api_for("alice")
    for text in ("plan", "more", "and more"):
        api.post(f"/sessions/{session.pk}/messages?wait=10", {"text": text})
    whole, _ = state_load(session.pk)
    assert whole.tasks and whole.timers and whole.seq == 10
    for seq in range(0, whole.seq + 1):
        known = state_load(session.pk, upto=seq)[0] if seq else None
        assert serialise(state_after(session.pk, known)) == serialise(whole)
