"""Slash commands through the API: team templates, /help for the sender, unknown commands."""

from __future__ import annotations

import pytest

from harness.messages import UserMessage
from sessions_app.models import Entry

pytestmark = pytest.mark.django_db(transaction=True)

REVIEW = {
    "name": "review",
    "description": "Review a pull request the team's way",
    "template": "Review pull request $ARGUMENTS against our checklist. MARKER-TEMPLATE",
}


@pytest.fixture
def team_templates(personas):
    """The team's own command, stored as teams store them (a built-in's name is refused
    there, and the registry keeps the built-in's meaning besides)."""
    from skills_app.services import command_create

    return command_create(user=personas["alice"][0], team=personas["acme"], fields=REVIEW)


def test_a_template_stores_what_was_typed_and_the_model_reads_the_expansion(
    api_for, session, scripted, team_templates
):
    r = api_for("alice").post(f"/sessions/{session.pk}/messages?wait=10", {"text": "/review 42"})
    assert r.status_code == 200
    command = Entry.objects.get(session=session, kind="command")
    assert command.content == "/review 42"
    expansion = "Review pull request 42 against our checklist. MARKER-TEMPLATE"
    assert command.data["expansion"] == expansion and command.data["name"] == "review"
    last = scripted.requests[0].messages[-1]
    assert isinstance(last, UserMessage) and last.text == expansion
    assert not any("/review" in getattr(m, "text", "") for m in scripted.requests[0].messages)


def test_help_lists_team_templates_and_is_no_entry(api_for, session, scripted, team_templates):
    body = api_for("bob").post(f"/sessions/{session.pk}/messages", {"text": "/help"}).json()
    assert "/review [arguments] — Review a pull request the team's way" in body["help"]
    assert not Entry.objects.filter(session=session).exists()
    assert scripted.requests == []


def test_an_unknown_command_is_a_notice_and_no_model_call(api_for, session, scripted):
    r = api_for("alice").post(f"/sessions/{session.pk}/messages?wait=5", {"text": "/nope x"})
    entries = r.json()["entries"]
    assert [e["kind"] for e in entries] == ["command", "notice"]
    assert entries[1]["data"] == {"code": "unknown_command", "command": "nope"}
    assert "Unknown command /nope" in entries[1]["content"]
    assert scripted.requests == []


def test_the_completion_list_has_builtins_then_team_commands(api_for, session, team_templates):
    listed = api_for("bob").get(f"/sessions/{session.pk}/commands").json()
    names = [c["name"] for c in listed]
    assert names == ["help", "compact", "summary-n-fork", "rewind", "handoff", "review"]
    assert listed[3] == {
        "name": "rewind",
        "description": "Start a new session from this one's history up to entry SEQ.",
        "usage": "/rewind SEQ [message]",
    }
    assert api_for("charlie").get(f"/sessions/{session.pk}/commands").status_code == 404


def test_without_a_team_command_source_only_builtins_are_listed(api_for, session):
    listed = api_for("alice").get(f"/sessions/{session.pk}/commands").json()
    assert [c["name"] for c in listed][-1] == "handoff"


def test_the_page_shows_help_to_the_sender(client, personas, session):
    client.force_login(personas["alice"][0])
    r = client.post(f"/sessions/{session.pk}/send/", {"text": "/help"}, HTTP_HX_REQUEST="true")
    assert r.status_code == 200
    assert b"composer-help" in r.content and b"/summary-n-fork" in r.content
    assert not Entry.objects.filter(session=session).exists()
