"""Compaction through the API: /compact, the boundary, the context and the transcript."""

from __future__ import annotations

import json

import pytest

from harness.testing import reply
from sessions_app.models import Entry

pytestmark = pytest.mark.django_db(transaction=True)


def say(api, session, text):
    body = api.post(f"/sessions/{session.pk}/messages?wait=10", {"text": text}).json()
    assert body["status"] in ("idle", "waiting"), body
    return body


def test_slash_compact_folds_history_into_a_boundary(api_for, session, scripted):
    api = api_for("alice")
    tasks = [{"text": "Ship it", "status": "in_progress"}]
    scripted.steps = [
        reply("", ("c1", "todo_write", json.dumps({"tasks": tasks}))),
        reply("Planned. " + "detail " * 300),
    ]
    say(api, session, "Plan the release; the repo is /srv/app. " + "context " * 300)
    for n in range(3):
        say(api, session, f"Step {n}: " + "more words " * 200)
    scripted.steps = [reply("Summary: release planned for /srv/app; user wants it shipped.")]
    body = say(api, session, "/compact keep the paths")
    kinds = [e["kind"] for e in body["entries"]]
    assert kinds == ["command", "boundary"], kinds
    boundary = body["entries"][1]
    data = boundary["data"]
    assert boundary["content"].startswith("Summary: release planned")
    assert data["trigger"] == "manual" and data["instructions"] == "keep the paths"
    assert data["carried"]["tasks"] == tasks
    assert data["tokens_after"] < data["tokens_before"]
    summary_request = scripted.requests[-1]
    assert "keep the paths" in summary_request.messages[-1].text

    context = api.get(f"/sessions/{session.pk}/context").json()
    kinds = [b["kind"] for b in context["blocks"]]
    assert kinds[:4] == ["system", "system", "summary", "state"]
    assert "[in_progress] Ship it" in context["blocks"][3]["text"]
    cut = data["first_kept_seq"]
    assert all(b["seq"] >= cut for b in context["blocks"] if b["kind"] == "entry")

    page = api.get(f"/sessions/{session.pk}/entries?limit=500").json()["entries"]
    before = [e for e in page if e["seq"] < cut]
    assert before and not any(e["in_context"] for e in before)
    assert api.get(f"/sessions/{session.pk}").json()["context"]["tokens"] == data["tokens_after"]
    state = api.get(f"/sessions/{session.pk}/state").json()
    assert state["pending_compact"] is None and state["snapshot_seq"] == boundary["seq"]

    scripted.steps = [reply("Carrying on.")]
    say(api, session, "next")
    sent = scripted.requests[-1].messages
    assert any("Summary: release planned" in getattr(m, "text", "") for m in sent)
    assert not any("Plan the release" in getattr(m, "text", "") for m in sent)


def test_compact_with_nothing_to_fold_says_so(api_for, session, scripted):
    api = api_for("alice")
    say(api, session, "hello")
    r = api.post(f"/sessions/{session.pk}/compact", {"instructions": None})
    assert r.status_code == 202
    body = api.post(f"/sessions/{session.pk}/messages?wait=10", {"text": "/nope"}).json()
    notices = Entry.objects.filter(session=session, kind="notice").values_list("data", flat=True)
    assert {"code": "nothing_to_fold"} in list(notices), body
    assert not Entry.objects.filter(session=session, kind="boundary").exists()
    assert api.get(f"/sessions/{session.pk}/state").json()["pending_compact"] is None


def test_compact_on_another_teams_session_is_404(api_for, session):
    assert api_for("charlie").post(f"/sessions/{session.pk}/compact", {}).status_code == 404
    assert not Entry.objects.filter(session=session).exists()


def test_search_and_read_reach_behind_the_boundary(api_for, session, scripted):
    api = api_for("alice")
    say(api, session, "The secret build id is BX-4471. " + "padding " * 400)
    for n in range(3):
        say(api, session, f"Step {n}: " + "more words " * 200)
    scripted.steps = [reply("Summary without the id.")]
    say(api, session, "/compact")
    cut = Entry.objects.get(session=session, kind="boundary").data["first_kept_seq"]
    scripted.steps = [
        reply("", ("s1", "search_history", json.dumps({"query": "bx-4471"}))),
        reply("", ("r1", "read_entry", json.dumps({"seq": 1}))),
        reply("", ("r2", "read_entry", json.dumps({"seq": 99999}))),
        reply("Found it."),
    ]
    say(api, session, "what was the build id?")
    results = list(Entry.objects.filter(session=session, kind="tool_result").order_by("seq"))
    found, read, missing = results[-3:]
    assert "seq 1 (user): The secret build id is BX-4471." in found.content
    assert cut > 1
    assert read.content.startswith("Entry 1 (user), characters 0–")
    assert "BX-4471" in read.content and read.data["is_error"] is False
    assert missing.data["is_error"] is True and "no entry 99999" in missing.content
