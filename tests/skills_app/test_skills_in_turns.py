"""Skills and team commands in a session's turns, through the real URLconf, services and
ORM, with a scripted model that records what it was sent."""

from __future__ import annotations

import json

import pytest

from harness.messages import SystemMessage, ToolResultMessage, UserMessage
from harness.testing import reply

pytestmark = pytest.mark.django_db(transaction=True)

BODY = "1. Read the failing test.\n2. Fix the smallest thing.\nMARKER-SKILL-BODY"


@pytest.fixture
def skill(personas):
    from skills_app.services import skill_create

    return skill_create(
        user=personas["alice"][0],
        team=personas["acme"],
        fields={"name": "debugging", "description": "How we debug a failing test", "body": BODY},
    )


def test_a_selected_skill_is_one_line_until_the_agent_loads_it(api_for, scripted, session, skill):
    alice = api_for("alice")
    r = alice.patch(f"/sessions/{session.pk}", {"skills": [skill.pk]})
    assert r.status_code == 200, r.content
    load = ("s1", "load_skill", json.dumps({"name": "debugging"}))
    scripted.steps = [reply("", load), reply("Loaded.")]
    alice.post(f"/sessions/{session.pk}/messages?wait=30", {"text": "The build is red."})
    first, second = scripted.requests[-2:]
    system = first.messages[0]
    assert isinstance(system, SystemMessage)
    assert "debugging — How we debug a failing test" in system.text
    assert "MARKER-SKILL-BODY" not in system.text, "no body until loaded"
    assert "load_skill" in [t.name for t in first.tools]
    result = second.messages[-1]
    assert isinstance(result, ToolResultMessage) and "MARKER-SKILL-BODY" in result.text
    state = alice.get(f"/sessions/{session.pk}/state").json()
    assert state["loaded_skills"] == ["debugging"]
    context = alice.get(f"/sessions/{session.pk}/context").json()
    assert any(b["kind"] == "skills" for b in context["blocks"])


def test_a_team_command_expands_when_sent(api_for, personas, scripted, session):
    from skills_app.services import command_create

    command_create(
        user=personas["alice"][0],
        team=personas["acme"],
        fields={"name": "review", "description": "Review a file", "template": "Review $ARGUMENTS."},
    )
    alice = api_for("alice")
    out = alice.post(f"/sessions/{session.pk}/messages?wait=30", {"text": "/review app.py"}).json()
    typed = next(e for e in out["entries"] if e["kind"] == "command")
    assert typed["content"] == "/review app.py"
    assert typed["data"]["expansion"] == "Review app.py."
    last = scripted.requests[-1].messages[-1]
    assert isinstance(last, UserMessage) and last.text == "Review app.py."
    names = [c["name"] for c in alice.get(f"/sessions/{session.pk}/commands").json()]
    assert "review" in names and "compact" in names
