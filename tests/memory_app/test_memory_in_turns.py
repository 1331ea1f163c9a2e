"""Memory in a session's turns: through the real URLconf, services and ORM, with a scripted
model that records what it was sent."""

from __future__ import annotations

import json

import pytest

from harness.messages import SystemMessage
from harness.testing import reply

pytestmark = pytest.mark.django_db(transaction=True)


def select(api, session, space, mode):
    r = api.patch(f"/sessions/{session.pk}", {"memory": [{"space": space.pk, "mode": mode}]})
    assert r.status_code == 200, r.content


def system_text(request) -> str:
    first = request.messages[0]
    assert isinstance(first, SystemMessage)
    return first.text


def test_a_note_is_in_the_call_and_a_teammate_s_edit_reaches_the_next(
    api_for, scripted, session, space, note
):
    alice, bob = api_for("alice"), api_for("bob")
    select(alice, session, space, "read")
    alice.post(f"/sessions/{session.pk}/messages?wait=30", {"text": "How do we indent?"})
    assert "Use tabs." in system_text(scripted.requests[-1])

    r = bob.patch(f"/memory-notes/{note.pk}", {"version": note.version, "body": "Use spaces."})
    assert r.status_code == 200, r.content
    alice.post(f"/sessions/{session.pk}/messages?wait=30", {"text": "And now?"})
    assert "Use spaces." in system_text(scripted.requests[-1])
    assert "Use tabs." not in system_text(scripted.requests[-1])

    context = alice.get(f"/sessions/{session.pk}/context").json()
    memory = [b for b in context["blocks"] if b["kind"] == "memory"]
    assert memory and "Use spaces." in memory[0]["text"] and memory[0]["tokens"] > 0
    assert context["truncated"] == []


def test_what_the_budget_leaves_out_is_named_in_the_api(
    api_for, personas, scripted, session, space
):
    from memory_app.services import note_create, space_update

    alice = api_for("alice")
    for n in range(8):
        note_create(
            space=space, title=f"Detail {n}", body="words " * 150, user=personas["alice"][0]
        )
    space_update(space=space, fields={"budget_tokens": 300})
    select(alice, session, space, "read")
    alice.post(f"/sessions/{session.pk}/messages?wait=30", {"text": "hi"})
    assert "memory truncated:" in system_text(scripted.requests[-1])
    truncated = alice.get(f"/sessions/{session.pk}/context").json()["truncated"]
    assert truncated and truncated[0]["space"] == "conventions"
    assert len(truncated[0]["notes"]) >= 1


def memory_call(command: dict) -> tuple[str, str, str]:
    return ("m1", "memory", json.dumps(command))


def test_the_agent_writes_only_where_the_session_may(api_for, scripted, session, space):
    from memory_app.models import MemoryNote, MemoryRevision

    alice = api_for("alice")
    create = {"command": "create", "path": "/memories/conventions/Deploys.md",
              "file_text": "Never on Fridays."}  # fmt: skip

    select(alice, session, space, "read")
    scripted.steps = [reply("", memory_call(create)), reply("Could not.")]
    out = alice.post(f"/sessions/{session.pk}/messages?wait=30", {"text": "Remember it."}).json()
    result = next(e for e in out["entries"] if e["kind"] == "tool_result")
    assert result["data"]["is_error"] and "read only" in result["content"]
    assert not MemoryNote.objects.filter(title="Deploys").exists()

    select(alice, session, space, "write")
    scripted.steps = [reply("", memory_call(create)), reply("Noted.")]
    out = alice.post(f"/sessions/{session.pk}/messages?wait=30", {"text": "Remember it."}).json()
    result = next(e for e in out["entries"] if e["kind"] == "tool_result")
    assert not result["data"]["is_error"], result["content"]
    note = MemoryNote.objects.get(space=space, title="Deploys")
    assert note.body == "Never on Fridays."
    revision = MemoryRevision.objects.get(note=note)
    call = next(e for e in out["entries"] if e["kind"] == "assistant")
    assert (revision.session_id, revision.seq) == (session.pk, call["seq"])
