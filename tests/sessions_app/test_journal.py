"""Timers, questions, snapshots and recovery through the real services, API and scheduler."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from harness.state import fold, serialise
from harness.testing import reply
from sessions_app import scheduler, services
from sessions_app.journal import state_load
from sessions_app.leases import lease_take
from sessions_app.models import ArmedTimer, Entry, QueuedInput, Session, Snapshot
from sessions_app.selectors import context_entries_now

pytestmark = pytest.mark.django_db(transaction=True)


def settle(session_id: int, seconds: float = 10) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        row = Session.objects.get(pk=session_id)
        if row.lease_owner is None:
            return row.status
        time.sleep(0.02)
    raise AssertionError("the session never settled")


def kinds(session_id: int) -> list[str]:
    return list(Entry.objects.filter(session_id=session_id).values_list("kind", flat=True))


def call(name: str, arguments: object, call_id: str = "c1") -> tuple[str, str, str]:
    return (call_id, name, json.dumps(arguments))


# Questions -----------------------------------------------------------------------------


def ask(api, session, scripted, question="Which database?", options=("SQLite", "PostgreSQL")):
    scripted.steps = [
        reply("Let me ask.", call("ask_user", {"question": question, "options": list(options)}))
    ]
    body = api.post(f"/sessions/{session.pk}/messages?wait=10", {"text": "set it up"}).json()
    assert body["status"] == "waiting", body
    return api.get(f"/sessions/{session.pk}/state").json()["questions"][0]


def test_a_question_waits_for_its_answer_and_work_resumes(api_for, session, scripted):
    api = api_for("alice")
    question = ask(api, session, scripted)
    assert question["question"] == "Which database?"
    assert question["options"] == ["SQLite", "PostgreSQL"]
    assert api.get(f"/sessions/{session.pk}").json()["status"] == "waiting"
    assert len(scripted.requests) == 1, "the turn ended at the question"

    scripted.steps = [reply("PostgreSQL it is.")]
    r = api.post(
        f"/sessions/{session.pk}/answers", {"question": question["id"], "text": "PostgreSQL"}
    )
    assert r.status_code == 202, r.content
    assert settle(session.pk) == "idle"
    answer = Entry.objects.get(session=session, kind="answer")
    assert answer.content == "PostgreSQL" and answer.data["question"] == question["id"]
    assert answer.author.username == "alice"
    assert api.get(f"/sessions/{session.pk}/state").json()["questions"] == []
    last_request = scripted.requests[-1].messages
    assert last_request[-1].text == "[answer to: Which database?]\nPostgreSQL"
    assert kinds(session.pk)[-2:] == ["answer", "assistant"]


def test_bad_answers_are_refused_and_store_nothing(api_for, session, scripted):
    alice = api_for("alice")
    question = ask(alice, session, scripted)
    before = Entry.objects.filter(session=session).count()
    url = f"/sessions/{session.pk}/answers"
    assert alice.post(url, {"question": "q-unknown", "text": "x"}).status_code == 409
    assert alice.post(url, {"question": question["id"], "text": "   "}).status_code == 400
    assert alice.post(url, {"question": question["id"]}).status_code == 422
    assert alice.post(url, "{nope").status_code == 400
    assert (
        api_for("charlie").post(url, {"question": question["id"], "text": "x"}).status_code == 404
    )
    assert Entry.objects.filter(session=session).count() == before
    assert not QueuedInput.objects.filter(session=session).exists()

    scripted.steps = [reply("ok")]
    assert alice.post(url, {"question": question["id"], "text": "SQLite"}).status_code == 202
    settle(session.pk)
    again = alice.post(url, {"question": question["id"], "text": "PostgreSQL"})
    assert again.status_code == 409 and "not waiting" in again.json()["detail"]
    assert Entry.objects.filter(session=session, kind="answer").count() == 1


def test_a_message_while_waiting_keeps_the_question_pending(api_for, session, scripted):
    api = api_for("alice")
    ask(api, session, scripted)
    scripted.steps = [reply("Still waiting on your answer.")]
    body = api.post(f"/sessions/{session.pk}/messages?wait=10", {"text": "hold on"}).json()
    assert body["status"] == "waiting"
    assert len(api.get(f"/sessions/{session.pk}/state").json()["questions"]) == 1


# Timers --------------------------------------------------------------------------------


def arm(api, session, scripted, seconds=60, message="check the build"):
    scripted.steps = [
        reply("", call("set_timer", {"seconds": seconds, "message": message})),
        reply("Armed."),
    ]
    api.post(f"/sessions/{session.pk}/messages?wait=10", {"text": "remind me"})
    return api.get(f"/sessions/{session.pk}/state").json()["timers"][0]


def test_a_due_timer_fires_once_as_an_entry_and_starts_a_turn(api_for, session, scripted):
    api = api_for("alice")
    timer = arm(api, session, scripted)
    assert timer["message"] == "check the build" and timer["seconds"] == 60
    row = ArmedTimer.objects.get(session=session)
    assert row.timer_id == timer["id"]

    assert scheduler.tick() == (0, 0), "not due yet"
    scripted.steps = [reply("The build is green.")]
    later = timezone.now() + timedelta(seconds=61)
    ticks = [threading.Thread(target=scheduler.tick, args=(later,)) for _ in range(3)]
    for t in ticks:
        t.start()
    for t in ticks:
        t.join()
    assert settle(session.pk) == "idle"
    fired = Entry.objects.filter(session=session, kind="timer")
    assert [(e.content, e.data["timer"]) for e in fired] == [("check the build", timer["id"])]
    assert kinds(session.pk)[-2:] == ["timer", "assistant"]
    assert scripted.requests[-1].messages[-1].text == f"[timer {timer['id']} fired] check the build"
    assert api.get(f"/sessions/{session.pk}/state").json()["timers"] == []
    assert scheduler.tick(later) == (0, 0)
    assert not ArmedTimer.objects.exists()


def test_a_cancelled_timer_never_fires(api_for, session, scripted):
    api = api_for("alice")
    timer = arm(api, session, scripted)
    scripted.steps = [reply("", call("cancel_timer", {"id": timer["id"]})), reply("Cancelled.")]
    api.post(f"/sessions/{session.pk}/messages?wait=10", {"text": "never mind"})
    assert api.get(f"/sessions/{session.pk}/state").json()["timers"] == []
    assert not ArmedTimer.objects.exists()
    assert scheduler.tick(timezone.now() + timedelta(days=1)) == (0, 0)
    assert not Entry.objects.filter(session=session, kind="timer").exists()


def test_a_timer_that_fired_mid_turn_waits_for_the_boundary(api_for, personas, session, scripted):
    api = api_for("alice")
    arm(api, session, scripted, seconds=5)
    lease = lease_take(session.pk)  # a turn is running elsewhere
    assert scheduler.tick(timezone.now() + timedelta(seconds=6)) == (1, 0)
    assert not Entry.objects.filter(session=session, kind="timer").exists()
    assert QueuedInput.objects.get(session=session).kind == "timer"
    scripted.steps = [reply("Timer seen.")]
    assert services.turn_boundary(session.pk, lease) == lease  # the timer enters the log
    assert kinds(session.pk)[-1] == "timer"


# Snapshots -----------------------------------------------------------------------------


def test_snapshots_are_written_every_k_entries_and_load_to_the_same_state(
    api_for, session, scripted, settings
):
    settings.HORSIE = {**settings.HORSIE, "SNAPSHOT_EVERY": 4}
    api = api_for("alice")
    tasks = [{"text": "one", "status": "pending"}]
    scripted.steps = [reply("", call("todo_write", {"tasks": tasks})), reply("Listed.")]
    api.post(f"/sessions/{session.pk}/messages?wait=10", {"text": "plan"})
    for n in range(3):
        api.post(f"/sessions/{session.pk}/messages?wait=10", {"text": f"more {n}"})
    assert list(
        Snapshot.objects.filter(session=session).order_by("seq").values_list("seq", flat=True)
    ) == [4, 8]
    state = api.get(f"/sessions/{session.pk}/state").json()
    assert state["snapshot_seq"] == 8 and state["seq"] == 10
    assert state["tasks"] == tasks
    from sessions_app.stores import log_entry

    whole = fold(log_entry(e) for e in Entry.objects.filter(session=session))
    loaded, _ = state_load(session.pk)
    assert serialise(loaded) == serialise(whole)


# Recovery ------------------------------------------------------------------------------


def dead_runner_mid_tool(session):
    """What a runner killed during a tool call leaves: the lease held, a call with no result."""
    lease = lease_take(session.pk)
    services.entry_append(session_id=session.pk, kind="user", content="do it")
    services.entry_append(
        session_id=session.pk,
        kind="assistant",
        content="",
        data={"tool_calls": [{"id": "c9", "name": "todo_write", "arguments": '{"tasks": []}'}]},
    )
    Session.objects.filter(pk=session.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    return lease


def test_an_expired_turn_is_closed_paired_and_resumed(session, scripted):
    dead_runner_mid_tool(session)
    scripted.steps = [reply("Picking up where I was.")]
    assert scheduler.tick() == (0, 1)
    assert settle(session.pk) == "idle"
    entries = list(Entry.objects.filter(session=session))
    assert [e.kind for e in entries] == ["user", "assistant", "tool_result", "notice", "assistant"]
    result, notice = entries[2], entries[3]
    assert result.data["call_id"] == "c9" and result.data["is_error"] is True
    assert notice.data == {"code": "turn_interrupted", "resumed": True}
    assert "resumes" in notice.content
    sent = scripted.requests[-1].messages
    assert sent[-1].kind == "tool_result" and sent[-1].call_id == "c9"
    assert len({e.seq for e in entries}) == len(entries)


def test_a_turn_that_dies_twice_without_progress_is_closed(session, scripted):
    dead_runner_mid_tool(session)
    services.turn_interrupted(session.pk)  # the first takeover resumed, then died too
    Session.objects.filter(pk=session.pk).update(
        lease_owner="dead", lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    calls = len(scripted.requests)
    assert scheduler.tick() == (0, 1)
    assert settle(session.pk) == "idle"
    last = Entry.objects.filter(session=session).last()
    assert last.data == {"code": "turn_interrupted", "resumed": False}
    assert len(scripted.requests) == calls


def test_input_stranded_without_a_runner_is_picked_up(session, personas, scripted):
    row = QueuedInput.objects.create(session=session, text="hello?", author=personas["alice"][0])
    QueuedInput.objects.filter(pk=row.pk).update(created_at=timezone.now() - timedelta(seconds=10))
    assert scheduler.tick() == (0, 1)
    assert settle(session.pk) == "idle"
    assert kinds(session.pk) == ["user", "assistant"]


def test_a_live_lease_is_never_taken_over(session, scripted):
    lease_take(session.pk)
    assert scheduler.tick() == (0, 0)
    assert context_entries_now(session.pk) == []


def test_a_runner_that_lost_its_lease_writes_nothing(session):
    from harness.ports import LeaseLost

    stale = lease_take(session.pk)
    Session.objects.filter(pk=session.pk).update(lease_owner="the-runner-that-took-over")
    with pytest.raises(LeaseLost):
        services.entry_append(session_id=session.pk, kind="assistant", content="late", lease=stale)
    assert not Entry.objects.filter(session=session).exists()
    assert Session.objects.get(pk=session.pk).last_seq == 0
