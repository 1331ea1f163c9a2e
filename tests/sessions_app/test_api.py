"""The HTTP contract of API.md, through the real URLconf, for all three personas."""

from __future__ import annotations

import pytest

from sessions_app.models import Entry, QueuedInput, Session

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_message_is_stored_answered_and_readable(api_for, session, scripted):
    api = api_for("alice")
    r = api.post(f"/sessions/{session.pk}/messages?wait=10", {"text": "Hello"})
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["status"] == "idle"
    assert body["seq"] == 1 and body["queued"] is False
    assert [(e["kind"], e["content"]) for e in body["entries"]] == [
        ("user", "Hello"),
        ("assistant", "Scripted reply."),
    ]
    assert body["entries"][0]["author"] == "alice"
    assert body["entries"][1]["data"]["usage"]["output_tokens"] > 0
    page = api.get(f"/sessions/{session.pk}/entries?after=1").json()
    assert [e["seq"] for e in page["entries"]] == [2] and page["has_more"] is False
    assert all(e["in_context"] for e in page["entries"])
    sent = scripted.requests[0].messages
    assert [m.kind for m in sent] == ["system", "user"]


def test_a_teammate_reads_and_talks_but_another_team_gets_404(api_for, session, scripted):
    assert api_for("bob").get(f"/sessions/{session.pk}").status_code == 200
    charlie = api_for("charlie")
    paths = ["", "/entries", "/context", "/state"]
    for path in paths:
        r = charlie.get(f"/sessions/{session.pk}{path}")
        assert r.status_code == 404, path
        assert "detail" in r.json()
    assert charlie.post(f"/sessions/{session.pk}/messages", {"text": "hi"}).status_code == 404
    assert charlie.patch(f"/sessions/{session.pk}", {"title": "x"}).status_code == 404
    assert session.pk not in [s["id"] for s in charlie.get("/sessions").json()]
    assert not QueuedInput.objects.exists() and not Entry.objects.exists()


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"text": ""}, 400),
        ({"text": "   \n"}, 400),
        ({"text": "x" * 200_001}, 413),
        ({}, 422),
        ({"text": 5}, 422),
        ('{"text": "unterminated', 400),
    ],
)
def test_bad_messages_are_refused_and_store_nothing(api_for, session, body, status):
    r = api_for("alice").post(f"/sessions/{session.pk}/messages", body)
    assert r.status_code == status, r.content
    assert r.json()["detail"]
    assert not QueuedInput.objects.exists() and not Entry.objects.exists()


def test_unknown_ids_and_bad_tokens(api_for, session, client):
    api = api_for("alice")
    assert api.get("/sessions/999999").status_code == 404
    assert api.post("/sessions/999999/messages", {"text": "hi"}).status_code == 404
    assert api.post("/sessions", {"model": 999999}).status_code == 404
    assert client.get("/api/v1/sessions").status_code == 401
    r = client.get("/api/v1/sessions", headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401 and r.json()["detail"]


def test_model_cards_and_presets_are_team_scoped(api_for, personas, settings):
    settings.HORSIE = {**settings.HORSIE, "PROVIDER_ENV": ["OPENAI_API_KEY"]}
    alice, charlie = api_for("alice"), api_for("charlie")
    r = alice.post(
        "/models",
        {
            "name": "GPT",
            "wire": "openai_chat",
            "model": "gpt-x",
            "api_key_env": "OPENAI_API_KEY",
            "context_window": 128000,
        },
    )
    assert r.status_code == 201, r.content
    card = r.json()
    assert card["team"] == "acme" and "api_key" not in card
    assert charlie.get(f"/models/{card['id']}").status_code == 404
    assert charlie.post("/presets", {"name": "p", "model": card["id"]}).status_code == 404
    r = alice.post(
        "/presets",
        {
            "name": "Terse",
            "model": card["id"],
            "system_prompt": "Be terse.",
            "auto_compact": False,
            "compact_at": 0.5,
        },
    )
    assert r.status_code == 201, r.content
    preset = r.json()
    r = alice.post("/sessions", {"preset": preset["id"], "title": "From preset"})
    assert r.status_code == 201, r.content
    made = r.json()
    assert (made["model"], made["auto_compact"], made["compact_at"]) == (card["id"], False, 0.5)
    context = made["context"]
    assert context["tokens"] > 0, "the meter is never blank: the system block is counted"
    assert {k: context[k] for k in ("window", "effective_window", "trigger_tokens", "armed")} == {
        "window": 128000,
        "effective_window": None,
        "trigger_tokens": None,
        "armed": False,
    }
    assert context["not_armed_because"] == "auto-compaction is off for this session"
    assert made["last_error"] is None
    r = alice.post("/sessions", {"preset": preset["id"], "auto_compact": True})
    assert r.json()["auto_compact"] is True
    assert r.json()["context"]["trigger_tokens"] == 64000, "compact_at moves it earlier"
    assert r.json()["context"]["armed"] is True
    assert alice.delete(f"/models/{card['id']}").status_code == 409
    assert (
        alice.post("/models", {"name": "x", "wire": "telepathy", "model": "m"}).status_code == 422
    )
    assert alice.post("/sessions", {"memory": [{"space": 7, "mode": "read"}]}).status_code == 400


def test_input_mid_turn_is_queued_and_enters_at_the_boundary(api_for, session, scripted):
    import asyncio

    gate = asyncio.Event()
    scripted.gate = gate
    api = api_for("alice")
    first = api.post(f"/sessions/{session.pk}/messages", {"text": "first"}).json()
    second = api.post(f"/sessions/{session.pk}/messages", {"text": "second"})
    assert second.status_code == 202
    assert second.json() == {"seq": None, "queued": True}
    assert QueuedInput.objects.filter(text="second").exists()
    from sessions_app.dispatcher import TurnThread

    TurnThread.get().loop.call_soon_threadsafe(gate.set)
    r = api.post(f"/sessions/{session.pk}/messages?wait=10", {"text": "third"})
    assert first["seq"] == 1
    kinds = [(e.kind, e.content) for e in Entry.objects.filter(session=session).order_by("seq")]
    assert kinds[:2] == [("user", "first"), ("assistant", "Scripted reply.")]
    assert ("user", "second") in kinds and ("user", "third") in kinds
    assert r.json()["status"] == "idle"
    assert kinds[-1][0] == "assistant"
    assert not QueuedInput.objects.exists()


def test_context_and_state_endpoints(api_for, session, scripted):
    api = api_for("alice")
    api.post(f"/sessions/{session.pk}/messages?wait=10", {"text": "Count me"})
    ctx = api.get(f"/sessions/{session.pk}/context").json()
    assert [(b["kind"], b["role"], b["seq"]) for b in ctx["blocks"]] == [
        ("system", "system", None),
        ("system", "tools", None),
        ("entry", "user", 1),
        ("entry", "assistant", 2),
    ]
    assert "todo_write" in ctx["blocks"][1]["text"]
    assert ctx["tokens"] == sum(b["tokens"] for b in ctx["blocks"])
    assert (ctx["window"], ctx["trigger_tokens"]) == (8000, 6400)
    state = api.get(f"/sessions/{session.pk}/state").json()
    assert state["tasks"] == [] and state["snapshot_seq"] is None


def test_the_model_keeps_a_task_list_through_todo_write(api_for, session, scripted):
    import json

    from harness.testing import reply

    tasks = [{"text": "Draft", "status": "done"}, {"text": "Review", "status": "pending"}]
    scripted.steps = [
        reply("", ("t1", "todo_write", json.dumps({"tasks": tasks}))),
        reply("Listed."),
    ]
    api = api_for("alice")
    done = api.post(f"/sessions/{session.pk}/messages?wait=10", {"text": "plan"}).json()
    kinds = [e["kind"] for e in done["entries"]]
    assert kinds == ["user", "assistant", "tool_result", "assistant"]
    state = api.get(f"/sessions/{session.pk}/state").json()
    assert state["tasks"] == tasks
    assert [t.name for t in scripted.requests[0].tools] == [
        "todo_write",
        "set_timer",
        "cancel_timer",
        "ask_user",
        "search_history",
        "read_entry",
    ]


def test_slash_help_answers_the_sender_only_without_an_entry_or_a_turn(api_for, session, scripted):
    r = api_for("alice").post(f"/sessions/{session.pk}/messages?wait=5", {"text": "/help"})
    assert r.status_code == 200
    body = r.json()
    assert "/rewind SEQ [message]" in body["help"] and "/compact [instructions]" in body["help"]
    assert not Entry.objects.filter(session=session).exists()
    assert scripted.requests == []


def test_a_provider_failure_leaves_a_notice_and_the_session_usable(api_for, session, scripted):
    from harness.providers.base import ProviderError
    from harness.testing import reply

    scripted.steps = [ProviderError("upstream down", code="server_error"), reply("recovered")]
    api = api_for("alice")
    r = api.post(f"/sessions/{session.pk}/messages?wait=10", {"text": "one"}).json()
    assert [e["kind"] for e in r["entries"]] == ["user", "notice"]
    assert r["entries"][1]["data"]["code"] == "provider_error"
    r = api.post(f"/sessions/{session.pk}/messages?wait=10", {"text": "two"}).json()
    assert r["entries"][-1]["content"] == "recovered"


def test_entries_cannot_be_changed_or_deleted(session):
    from sessions_app.models import ImmutableEntry
    from sessions_app.services import entry_append

    entry = entry_append(session_id=session.pk, kind="user", content="keep")
    entry.content = "changed"
    with pytest.raises(ImmutableEntry):
        entry.save()
    with pytest.raises(ImmutableEntry):
        entry.delete()


def test_entries_page_backwards_with_before(api_for, session):
    from sessions_app.services import entry_append

    for n in range(1, 8):
        entry_append(session_id=session.pk, kind="user", content=str(n))
    page = api_for("alice").get(f"/sessions/{session.pk}/entries?before=6&limit=3").json()
    assert [e["seq"] for e in page["entries"]] == [3, 4, 5]
    assert page["has_more"] is True
    page = api_for("alice").get(f"/sessions/{session.pk}/entries?after=4&limit=3").json()
    assert [e["seq"] for e in page["entries"]] == [5, 6, 7]
    assert page["has_more"] is False


def test_an_input_whose_direct_entry_fails_is_kept_in_the_queue(
    api_for, session, scripted, monkeypatch
):
    """The lease was free, so the message was to enter the log directly; that transaction
    fails once (say a dropped connection): the message is queued instead and its turn runs."""
    from sessions_app import services

    original, failures = services.input_append, []

    def fails_once(session_id, row):
        if not failures:
            failures.append(row.text)
            raise services.transaction.TransactionManagementError("the connection dropped")
        return original(session_id, row)

    monkeypatch.setattr(services, "input_append", fails_once)
    r = api_for("alice").post(f"/sessions/{session.pk}/messages?wait=10", {"text": "kept"})
    assert failures == ["kept"]
    assert r.status_code == 200 and r.json()["status"] == "idle", r.content
    kinds = [(e.kind, e.content) for e in Entry.objects.filter(session=session).order_by("seq")]
    assert kinds == [("user", "kept"), ("assistant", "Scripted reply.")]
    assert not QueuedInput.objects.exists()


def test_an_input_that_cannot_enter_at_all_still_waits_in_the_queue(
    api_for, session, scripted, monkeypatch
):
    from sessions_app import services

    def always_fails(session_id, row):
        raise services.transaction.TransactionManagementError("the log is unwritable")

    monkeypatch.setattr(services, "input_append", always_fails)
    api = api_for("alice")
    with pytest.raises(services.transaction.TransactionManagementError):
        api.post(f"/sessions/{session.pk}/messages", {"text": "not lost"})
    assert list(QueuedInput.objects.values_list("text", flat=True)) == ["not lost"]
    assert not Entry.objects.filter(session=session).exists()
    assert Session.objects.get(pk=session.pk).lease_owner in ("", None)


def test_a_patch_is_all_or_nothing(api_for, session, personas, monkeypatch):
    """Memory, skills and plain fields in one PATCH: when the last part fails, the notices
    and selections written before it are rolled back with it."""
    from memory_app.models import MemorySpace
    from sessions_app import services

    space = MemorySpace.objects.create(team=personas["acme"], name="facts")

    def broken(*, session, fields):
        raise RuntimeError("the update failed")

    monkeypatch.setattr(services, "session_update", broken)
    with pytest.raises(RuntimeError):
        api_for("alice").patch(
            f"/sessions/{session.pk}",
            {"memory": [{"space": space.pk, "mode": "read"}], "title": "renamed"},
        )
    fresh = Session.objects.get(pk=session.pk)
    assert fresh.memory == [] and fresh.title != "renamed"
    assert not Entry.objects.filter(session=session).exists()
