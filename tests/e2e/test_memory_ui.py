"""Memory spaces in a real Chromium against a real server and a scripted model.

A person edits a note on the space page, and the next model call of a session that selected
the space carries the new text. Switching a space off in the session's side panel leaves a
notice in the transcript and takes the space out of the next call. Every assertion about
the model is made on what the scripted model server recorded.

The tests take `docs/memory.png` (the session page with its memory panel) and, for a look,
the space page beside it in the test's temporary directory.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from .conftest import logged_in, watching

pytestmark = pytest.mark.e2e

USAGE = {"prompt_tokens": 600, "completion_tokens": 5, "total_tokens": 605}
LEARNED = "Stations are twelve miles apart."
WRITE = {"command": "create", "path": "/memories/decisions/Stations.md", "file_text": LEARNED}
SCRIPT = [
    # The first turn: the agent writes a note into `decisions` (selected read and write).
    {"tool_calls": [{"id": "c-mem", "name": "memory", "arguments": json.dumps(WRITE)}],
     "usage": USAGE},
    {"text": "Noted.", "repeat": True, "usage": USAGE},
]  # fmt: skip
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "memory.png"
OLD = "Indent with tabs."
NEW = "Indent with four spaces; never tabs."


def system_of_last_call(model_server):
    """The system message of the last request the scripted model received."""
    base = model_server.removesuffix("/v1")
    with urllib.request.urlopen(f"{base}/__requests", timeout=10) as response:
        requests = json.load(response)
    messages = requests[-1]["messages"]
    return "\n".join(str(m.get("content")) for m in messages if m["role"] == "system")


def say(horsie, session_id, text):
    done = horsie.api("POST", f"/sessions/{session_id}/messages?wait=30", "alice", {"text": text})
    assert done["status"] == "idle", done


@pytest.fixture(scope="module")
def spaces(horsie):
    conventions = horsie.api("POST", "/memory-spaces", "alice",
                             {"name": "conventions", "description": "How we write code"})  # fmt: skip
    style = horsie.api("POST", f"/memory-spaces/{conventions['id']}/notes", "alice",
                       {"title": "Style", "body": OLD, "pinned": True})  # fmt: skip
    horsie.api("POST", f"/memory-spaces/{conventions['id']}/notes", "bob",
               {"title": "Reviews", "body": "Every change gets one approving review."})  # fmt: skip
    decisions = horsie.api("POST", "/memory-spaces", "bob",
                           {"name": "decisions", "budget_tokens": 60})  # fmt: skip
    for title, body in [
        ("Queue", "Redis streams for the turn queue; one consumer group per worker pool. " * 4),
        ("Database", "PostgreSQL in production, SQLite embedded and in tests. " * 5),
        ("Auth", "Session cookies for the browser, bearer tokens for the API. " * 5),
    ]:
        horsie.api("POST", f"/memory-spaces/{decisions['id']}/notes", "bob",
                   {"title": title, "body": body})  # fmt: skip
    return {"conventions": conventions["id"], "style": style, "decisions": decisions["id"]}


@pytest.fixture(scope="module")
def session(horsie, spaces):
    card = horsie.api("GET", "/models", "alice")[0]["id"]
    memory = [{"space": spaces["conventions"], "mode": "read"},
              {"space": spaces["decisions"], "mode": "write"}]  # fmt: skip
    made = horsie.api("POST", "/sessions", "alice",
                      {"title": "Relay stations", "model": card, "memory": memory})  # fmt: skip
    return made["id"]


def test_a_note_edited_on_the_space_page_reaches_the_next_call(
    browser, horsie, model_server, spaces, session, tmp_path
):
    from playwright.sync_api import expect

    page = logged_in(browser, horsie, "bob", {"width": 1280, "height": 900})
    page.goto(f"{horsie.url}/memory/{spaces['decisions']}/")
    expect(page.locator(".memory-note")).to_have_count(3)
    say(horsie, session, "What are our conventions? Note how far apart stations are.")
    assert OLD in system_of_last_call(model_server)
    # The agent's write shows up on bob's open page, marked with its session.
    written = page.locator(".memory-note", has_text=LEARNED)
    expect(written).to_be_visible()
    expect(written.locator("a.by-session")).to_have_text(f"session #{session}")
    expect(written.locator(".agent-write")).to_be_visible()
    page.screenshot(path=str(tmp_path / "space.png"), full_page=True)

    page.goto(f"{horsie.url}/memory/{spaces['conventions']}/")
    card = page.locator(f"#note-{spaces['style']['id']}")
    card.get_by_role("button", name="Edit").click()
    card.get_by_label("Text (markdown)").fill(NEW)
    card.get_by_role("button", name="Save").click()
    expect(card.locator(".markdown")).to_have_text(NEW)
    expect(card).to_contain_text("v2")

    say(horsie, session, "And now?")
    system = system_of_last_call(model_server)
    assert NEW in system and OLD not in system

    page.context.close()


def test_switching_a_space_off_in_the_panel_leaves_the_next_call(
    browser, horsie, model_server, spaces, session
):
    from playwright.sync_api import expect

    page = logged_in(browser, horsie, "alice", {"width": 1440, "height": 900})
    page.goto(f"{horsie.url}/sessions/{session}/")
    watching(page)
    panel = page.locator("#memory-panel")
    expect(panel.locator(".memory-selected")).to_have_count(2)
    expect(panel.locator(".memory-cut")).to_contain_text("decisions")
    SCREENSHOT.parent.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOT))

    panel.get_by_label("Mode of conventions").select_option("")
    panel.get_by_role("button", name="Apply").click()
    expect(panel.locator(".memory-selected")).to_have_count(1)
    notice = page.locator("article.entry-notice").last
    expect(notice).to_contain_text("switched off `conventions`")

    replies = page.locator("article.entry-assistant")
    before = replies.count()
    page.get_by_label("Message").fill("Which conventions apply now?")
    page.get_by_label("Message").press("Enter")
    expect(replies).to_have_count(before + 1)
    system = system_of_last_call(model_server)
    assert "Space `conventions`" not in system and NEW not in system
    assert "Space `decisions`" in system
    page.context.close()


def test_the_new_session_form_prices_the_selection_as_it_changes(browser, horsie, spaces):
    from playwright.sync_api import expect

    page = logged_in(browser, horsie, "alice")
    page.goto(f"{horsie.url}/sessions/new/")
    cost = page.locator("#memory-cost")
    expect(cost).to_contain_text("No memory selected")
    page.get_by_label("decisions", exact=True).select_option("read")
    expect(cost).to_contain_text("Memory in every call")
    expect(cost).to_contain_text("of 8,000")
    expect(cost.locator(".memory-cut")).to_contain_text("of decisions")
    page.get_by_label("decisions", exact=True).select_option("")
    expect(cost).to_contain_text("No memory selected")
    page.context.close()
