"""A running subagent's progress shows inline in its parent's transcript, live, in Chromium
against a real daphne: its status while it works, then its reply, with no reload."""

from __future__ import annotations

import json

import pytest

from .conftest import logged_in, watching

pytestmark = pytest.mark.e2e

FINDING = "Carson Pass is open; snow lies above eight thousand feet, so ride before noon."
SCRIPT = [
    {
        "tool_calls": [
            {
                "id": "c-scout",
                "name": "spawn_subagent",
                "arguments": json.dumps({"type": "scout", "task": "Scout the Sierra passes."}),
            }
        ]
    },
    # The child's reply and the parent's next call race for these two: both say the same.
    {"text": FINDING, "pause": 0.08},
    {"text": FINDING, "pause": 0.08},
    {"text": "Noted: we ride by Carson Pass.", "repeat": True},
]


def test_a_running_subagent_updates_inline_in_the_parent(browser, horsie):
    from playwright.sync_api import expect

    kind = horsie.api(
        "POST",
        "/subagent-types",
        "alice",
        {"name": "scout", "description": "Scouts a route.", "system_prompt": "You scout."},
    )
    session = horsie.api(
        "POST", "/sessions", "alice", {"title": "Over the Sierra", "subagent_types": [kind["id"]]}
    )
    page = logged_in(browser, horsie, "bob")
    page.goto(f"{horsie.url}/sessions/{session['id']}/")
    watching(page)
    page.evaluate("window.sameDocument = true")
    horsie.api("POST", f"/sessions/{session['id']}/messages", "alice", {"text": "Scout it."})

    inline = page.locator("article.entry-tool_result .subagent-progress")
    expect(inline.locator(".badge")).to_have_text("running")
    expect(inline).to_contain_text("is working")
    expect(inline.locator(".badge")).to_have_text("idle")
    expect(inline.locator(".subagent-reply")).to_have_text(FINDING)
    child = inline.get_by_role("link").get_attribute("href")
    assert child and child != f"/sessions/{session['id']}/"
    expect(page.locator("article.entry-subagent_result .markdown")).to_have_text(FINDING)
    assert page.evaluate("window.sameDocument") is True
    page.context.close()
