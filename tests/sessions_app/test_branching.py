"""Fork, handoff, rewind and summary edits: new sessions, and an original left untouched."""

from __future__ import annotations

import json
import time

import pytest

from harness.providers.base import ProviderError
from harness.testing import reply
from sessions_app.models import Entry, Session

pytestmark = pytest.mark.django_db(transaction=True)


def say(api, session_id, text):
    body = api.post(f"/sessions/{session_id}/messages?wait=10", {"text": text}).json()
    assert body.get("status", "idle") in ("idle", "waiting"), body
    return body


def snapshot(session_id):
    """Everything about a session a fork could touch, as plain values."""
    entries = list(
        Entry.objects.filter(session_id=session_id)
        .order_by("seq")
        .values_list("seq", "kind", "content", "data", "tokens", "created_at")
    )
    row = Session.objects.filter(pk=session_id).values().get()
    return entries, row


def worked(api, session, scripted):
    tasks = [{"text": "Migrate /srv/db", "status": "in_progress"}]
    scripted.steps = [
        reply("", ("c1", "todo_write", json.dumps({"tasks": tasks}))),
        reply("On it."),
    ]
    say(api, session.pk, "Migrate the database at /srv/db; keep a backup.")
    say(api, session.pk, "And log every step.")
    return tasks


def test_a_fork_is_one_boundary_and_leaves_the_original_byte_for_byte(api_for, session, scripted):
    api = api_for("alice")
    tasks = worked(api, session, scripted)
    before = snapshot(session.pk)
    scripted.steps = [reply("Summary: migrating /srv/db with a backup; log every step.")]
    r = api.post(f"/sessions/{session.pk}/fork?wait=10")
    assert r.status_code == 201, r.content
    fork = r.json()
    assert (fork["kind"], fork["parent"], fork["status"]) == ("fork", session.pk, "idle")
    assert fork["parent_seq"] == before[0][-1][0]
    assert snapshot(session.pk) == before, "the original is exactly as it was"

    entries = api.get(f"/sessions/{fork['id']}/entries").json()["entries"]
    assert [e["kind"] for e in entries] == ["boundary"]
    boundary = entries[0]
    assert boundary["content"].startswith("Summary: migrating /srv/db")
    assert boundary["data"]["trigger"] == "fork"
    assert boundary["data"]["carried"]["tasks"] == tasks
    assert api.get(f"/sessions/{fork['id']}/state").json()["tasks"] == tasks
    request = scripted.requests[-1]
    assert request.messages[-1].text.startswith("[Compaction] This whole conversation")

    scripted.steps = [reply("Continuing.")]
    say(api, fork["id"], "go on")
    sent = scripted.requests[-1].messages
    assert "Summary: migrating /srv/db" in sent[1].text
    assert not any(getattr(m, "text", "") == "keep a backup." for m in sent)
    assert snapshot(session.pk) == before


def test_slash_summary_n_fork_stores_nothing_in_the_original(api_for, session, scripted):
    api = api_for("alice")
    worked(api, session, scripted)
    before = snapshot(session.pk)
    scripted.steps = [reply("Forked summary.")]
    r = api.post(f"/sessions/{session.pk}/messages", {"text": "/summary-n-fork"})
    assert r.status_code == 202
    child = r.json()["session"]
    assert Session.objects.get(pk=child).parent_id == session.pk
    assert snapshot(session.pk) == before


def test_a_failing_summariser_still_forks(api_for, session, scripted):
    api = api_for("alice")
    worked(api, session, scripted)
    scripted.steps = [ProviderError("quota", code="rate_limited")]
    fork = api.post(f"/sessions/{session.pk}/fork?wait=10").json()
    kinds = [e["kind"] for e in api.get(f"/sessions/{fork['id']}/entries").json()["entries"]]
    assert kinds == ["boundary", "notice"]
    boundary = Entry.objects.get(session_id=fork["id"], kind="boundary")
    assert "Migrate the database at /srv/db" in boundary.content
    assert boundary.data["failed"]


def test_handoff_is_written_then_edited_into_a_new_session(api_for, session, scripted):
    api = api_for("alice")
    worked(api, session, scripted)
    scripted.steps = [reply("## Goal\nMigrate /srv/db\n## Next steps\nRun the backup")]
    body = say(api, session.pk, "/handoff")
    kinds = [e["kind"] for e in body["entries"]]
    assert kinds == ["command", "notice"], kinds
    document = body["entries"][1]
    assert document["data"]["code"] == "handoff"
    assert "## Goal" in document["content"]
    assert scripted.requests[-1].messages[-1].text.startswith("[Handoff]")
    assert api.get(f"/sessions/{session.pk}/state").json()["pending_handoff"] is None

    calls = len(scripted.requests)
    edited = document["content"] + "\n## Pitfalls\nThe backup disk is small."
    r = api.post(f"/sessions/{session.pk}/fork", {"document": edited})
    assert r.status_code == 201
    child = r.json()
    boundary = Entry.objects.get(session_id=child["id"])
    assert boundary.content == edited and boundary.data["handoff"] is True
    assert len(scripted.requests) == calls, "no model call for an edited handoff"
    assert api.post(f"/sessions/{session.pk}/fork", {"document": "  "}).status_code == 400


def test_rewind_copies_the_history_up_to_an_entry_and_goes_another_way(api_for, session, scripted):
    api = api_for("alice")
    worked(api, session, scripted)
    before = snapshot(session.pk)
    tool_call = Entry.objects.get(session=session, kind="assistant", seq=2)
    assert tool_call.data["tool_calls"]
    scripted.steps = [reply("Taking the other path.")]
    r = api.post(f"/sessions/{session.pk}/rewind", {"seq": 2, "text": "Use a dump instead."})
    assert r.status_code == 201, r.content
    child = r.json()
    assert child["parent_seq"] == 2
    rows = list(Entry.objects.filter(session_id=child["id"]).order_by("seq"))
    assert [e.kind for e in rows[:3]] == ["user", "assistant", "tool_result"], "the call's result"
    assert rows[0].content == "Migrate the database at /srv/db; keep a backup."
    assert rows[3].content == "Use a dump instead."
    assert snapshot(session.pk) == before

    assert api.post(f"/sessions/{session.pk}/rewind", {"seq": 999}).status_code == 400
    assert api.post(f"/sessions/{session.pk}/rewind", {"seq": 0}).status_code == 422
    charlie = api_for("charlie")
    assert charlie.post(f"/sessions/{session.pk}/rewind", {"seq": 1}).status_code == 404
    assert charlie.post(f"/sessions/{session.pk}/fork").status_code == 404
    assert Session.objects.filter(parent=session).count() == 1


def test_an_edited_summary_is_a_new_boundary_the_next_context_uses(api_for, session, scripted):
    api = api_for("alice")
    worked(api, session, scripted)
    for n in range(3):
        say(api, session.pk, f"Step {n}: " + "words " * 1200)
    scripted.steps = [reply("Machine summary.")]
    say(api, session.pk, "/compact")
    first = Entry.objects.get(session=session, kind="boundary")
    r = api.post(
        f"/sessions/{session.pk}/summary",
        {"boundary": first.seq, "summary": "Human summary: the backup lives on /mnt/b."},
    )
    assert r.status_code == 201, r.content
    edit = r.json()
    assert edit["data"]["trigger"] == "edit" and edit["data"]["edited_from"] == first.seq
    assert edit["data"]["first_kept_seq"] == first.data["first_kept_seq"]
    assert edit["author"] == "alice"
    context = api.get(f"/sessions/{session.pk}/context").json()
    summary = next(b for b in context["blocks"] if b["kind"] == "summary")
    assert "Human summary" in summary["text"]
    stale = api.post(f"/sessions/{session.pk}/summary", {"boundary": first.seq, "summary": "x"})
    assert stale.status_code == 409
    assert Entry.objects.filter(session=session, kind="boundary").count() == 2
    assert (
        api_for("charlie")
        .post(f"/sessions/{session.pk}/summary", {"boundary": edit["seq"], "summary": "x"})
        .status_code
        == 404
    )


def test_a_fork_whose_runner_died_is_summarised_by_the_next(api_for, session, scripted):
    from datetime import timedelta

    from django.utils import timezone

    from sessions_app import branching, scheduler
    from sessions_app.dispatcher import TurnThread

    api = api_for("alice")
    worked(api, session, scripted)
    sent = []
    real_submit = TurnThread.submit
    TurnThread.submit = lambda self, coroutine: sent.append(coroutine.close())  # the runner dies
    try:
        child = branching.session_fork(parent=session, user=session.created_by)
    finally:
        TurnThread.submit = real_submit
    assert sent and not Entry.objects.filter(session=child).exists()
    Session.objects.filter(pk=child.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    scripted.steps = [reply("Summary after a takeover.")]
    assert scheduler.tick() == (0, 1)
    deadline = timezone.now() + timedelta(seconds=10)
    while Session.objects.get(pk=child.pk).lease_owner and timezone.now() < deadline:
        time.sleep(0.02)
    kinds = list(Entry.objects.filter(session=child).values_list("kind", "content"))
    assert kinds == [("boundary", "Summary after a takeover.")]
