"""A failed turn and a running compaction in a real Chromium against a real server.

A provider error raises the failure banner with its ways out while the page watches, and the
next good reply takes it away, with no reload. A `/compact` whose summariser answers slowly
shows "Compacting… N s" counting up until the boundary arrives. The meter always shows the
same number as the context view's total.

The first test takes `docs/failure.png`: the banner on a session whose turn failed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import logged_in, watching

pytestmark = pytest.mark.e2e

WINDOW = 4000
REFUSAL = "The model refused the request: this deployment is paused for maintenance"
FILLER = (
    "Every station keeps fresh horses, water and a keeper; riders change mounts in two "
    "minutes and hand the mochila on without stopping. "
)
SUMMARY = "## Summary\n- Route planned, Sierra and desert legs set\n- Next: stock stations"


def usage(prompt):
    return {"prompt_tokens": prompt, "completion_tokens": 20, "total_tokens": prompt + 20}


SCRIPT = [
    # The failure test: a refused call, then a good reply.
    {"status": 400, "message": REFUSAL},
    {"text": "Back on track.", "usage": usage(300)},
    # The compaction test: three turns, then a summariser that takes its time.
    {"text": "The route is planned.", "usage": usage(900)},
    {"text": "The Sierra leg is set.", "usage": usage(1400)},
    {"text": "The desert leg is set.", "usage": usage(1900)},
    {"text": SUMMARY, "pause": 0.2, "usage": usage(2000)},
]
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "failure.png"


@pytest.fixture(scope="module")
def small_card(horsie, model_server):
    card = {"name": "Scripted, small window", "wire": "openai_chat", "model": "scripted",
            "base_url": model_server, "context_window": WINDOW, "max_output_tokens": 256}  # fmt: skip
    return horsie.api("POST", "/models", "alice", card)["id"]


def send(page, text):
    page.get_by_label("Message").fill(text)
    page.get_by_label("Message").press("Enter")


def meter_equals_the_context_view(page):
    """The meter's number is the context view's total (both wait for the latest refresh)."""
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Context view").click()
    total = page.locator("#context-view .context-blocks")
    expect(total).to_be_visible()
    tokens = total.get_attribute("data-tokens")
    assert tokens and int(tokens) > 0
    expect(page.locator("#context-meter")).to_have_attribute("data-tokens", tokens)
    shown = f"{int(tokens):,} / "
    expect(page.locator("#context-meter .meter-numbers")).to_contain_text(shown)
    expect(page.locator("#context-view .context-total")).to_contain_text(f"{int(tokens):,} tokens")
    page.get_by_role("tab", name="Full transcript").click()


def test_a_failed_turn_shows_a_banner_until_the_next_good_reply(browser, horsie, small_card):
    from playwright.sync_api import expect

    session = horsie.api(
        "POST", "/sessions", "alice", {"title": "Pony Express: a bad day", "model": small_card}
    )
    page = logged_in(browser, horsie, "alice", {"width": 1440, "height": 900})
    page.goto(f"{horsie.url}/sessions/{session['id']}/")
    watching(page)
    page.evaluate("window.notReloaded = true")
    banner = page.locator("#failure")
    expect(banner).to_be_hidden()

    send(page, "Plan the relay from St. Joseph to Sacramento.")
    expect(banner).to_be_visible()
    expect(banner.locator(".failure-what")).to_contain_text("The last turn failed")
    expect(banner.locator(".failure-text")).to_contain_text("deployment is paused")
    expect(banner.get_by_role("button", name="Fork with summary")).to_be_visible()
    expect(banner.locator(".failure-window")).to_contain_text("declares 4,000 tokens")
    # The error reads as text, not as faint grey (waited for: a live update may swap the
    # banner in again just then).
    text_colour = re.compile(r"rgb\((29, 29, 39|232, 232, 240)\)")
    expect(banner.locator(".failure-text")).to_have_css("color", text_colour)
    expect(page.locator("#context-meter .meter-numbers")).to_have_text(
        re.compile(r"[\d,]+ / 4,000")
    )
    page.screenshot(path=str(SCREENSHOT))

    send(page, "Try again, please.")
    expect(page.locator("article.entry-assistant .markdown").last).to_have_text("Back on track.")
    expect(banner).to_be_hidden()
    assert page.evaluate("window.notReloaded") is True
    meter_equals_the_context_view(page)
    page.context.close()


def test_a_running_compaction_shows_its_progress(browser, horsie, small_card):
    from playwright.sync_api import expect

    session = horsie.api(
        "POST", "/sessions", "alice", {"title": "Pony Express: the long ride", "model": small_card}
    )
    sid = session["id"]
    for text in ("Plan the relay. " + FILLER * 12, "Now the Sierra leg. " + FILLER * 26, "Desert?"):
        done = horsie.api("POST", f"/sessions/{sid}/messages?wait=30", "alice", {"text": text})
        assert done["status"] == "idle", done

    page = logged_in(browser, horsie, "alice", {"width": 1440, "height": 900})
    page.goto(f"{horsie.url}/sessions/{sid}/")
    watching(page)
    progress = page.locator("#compacting")
    expect(progress).to_be_hidden()

    send(page, "/compact")
    expect(progress).to_be_visible()
    expect(progress).to_contain_text("Compacting…")
    # The summariser streams for a few seconds: the count goes up while the page waits.
    expect(progress.locator('[data-field="elapsed"]')).to_have_text(re.compile(r"^[1-9]\d*$"))
    # ...and the summary streams in under the notice as it is written.
    written = progress.locator(".compacting-summary")
    expect(written).not_to_be_empty()
    assert SUMMARY.startswith(written.text_content() or "")
    boundary = page.locator("article.entry-boundary")
    expect(boundary.locator(".boundary-title")).to_have_text("Compacted by /compact")
    expect(progress).to_be_hidden()
    expect(boundary.locator(".summary-edit input[name=pin]")).to_be_checked()
    meter_equals_the_context_view(page)
    page.context.close()
