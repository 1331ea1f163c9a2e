"""Skills chosen in the session's side panel, in a real Chromium against a real server and a
scripted model: a person ticks a skill and applies, the transcript shows the notice naming
it, and the next model request's system block lists it as one line (its body not), as the
scripted model server recorded it."""

from __future__ import annotations

import json
import urllib.request

import pytest

from .conftest import logged_in, watching

pytestmark = pytest.mark.e2e

USAGE = {"prompt_tokens": 400, "completion_tokens": 3, "total_tokens": 403}
SCRIPT = [{"text": "Noted.", "repeat": True, "usage": USAGE}]
BODY = "Run the formatter first, then the linter, then fix what is left by hand."


def system_of_last_call(model_server: str) -> str:
    base = model_server.removesuffix("/v1")
    with urllib.request.urlopen(f"{base}/__requests", timeout=10) as response:
        requests = json.load(response)
    assert requests, "the scripted model recorded no request"
    messages = requests[-1]["messages"]
    return "\n".join(str(m.get("content")) for m in messages if m["role"] == "system")


def test_a_skill_picked_in_the_panel_is_listed_in_the_next_call(
    browser, horsie, model_server, tmp_path
):
    from playwright.sync_api import expect

    skill = horsie.api("POST", "/skills", "alice",
                       {"name": "lint-fix", "description": "Fix lint errors the team's way",
                        "body": BODY})  # fmt: skip
    horsie.api("POST", "/skills", "alice", {"name": "pdf-forms", "description": "Fill PDFs"})
    card = horsie.api("GET", "/models", "alice")[0]["id"]
    session = horsie.api("POST", "/sessions", "alice", {"title": "Tidy up", "model": card})["id"]

    page = logged_in(browser, horsie, "bob", {"width": 1440, "height": 900})
    page.goto(f"{horsie.url}/sessions/{session}/")
    watching(page)
    panel = page.locator("#skills-panel")
    expect(panel.get_by_label("lint-fix")).not_to_be_checked()
    panel.get_by_label("lint-fix").check()
    panel.get_by_role("button", name="Apply").click()
    expect(panel.locator(".help")).to_contain_text("lint-fix")
    expect(panel.get_by_label("lint-fix")).to_be_checked()
    expect(panel.locator("[data-count=skills]")).to_have_text("1")
    notice = page.locator("article.entry-notice").last
    expect(notice).to_contain_text("added skill `lint-fix`")

    replies = page.locator("article.entry-assistant:not(#streaming)")
    page.get_by_label("Message").fill("Tidy the module, please.")
    page.get_by_label("Message").press("Enter")
    expect(replies).to_have_count(1)
    system = system_of_last_call(model_server)
    assert "- lint-fix — Fix lint errors the team's way" in system
    assert "pdf-forms" not in system and BODY not in system
    assert horsie.api("GET", f"/sessions/{session}", "alice")["skills"] == [skill["id"]]
    panel.screenshot(path=str(tmp_path / "skills-panel.png"))  # for a look
    page.context.close()
