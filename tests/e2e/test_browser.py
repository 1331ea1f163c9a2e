"""The tour, in a real Chromium against a real server: log in, start a session, talk to it,
and watch the reply stream in, while a teammate in another browser sees it live too.

`docs/screenshot.png`, the picture the README's tour shows, is taken by `test_state_panel`,
with a task list, a timer and a question in the panel.
"""

from __future__ import annotations

import re

import pytest

from .conftest import logged_in, watching

pytestmark = pytest.mark.e2e

REPLY = (
    "Here is a plan for the **Pony Express** relay:\n\n"
    "1. Saddle up at *St. Joseph*, Missouri\n"
    "2. Change horses at every station\n"
    "3. Hand the mochila to the next rider\n\n"
    "| Leg | Miles | Stations |\n|---|--:|--:|\n"
    "| St. Joseph → Fort Kearny | 290 | 21 |\n| Fort Kearny → Salt Lake | 750 | 52 |\n\n"
    "```python\nfor station in route:\n    swap_horse(station)\n```"
)
SCRIPT = [
    {
        "text": REPLY,
        "usage": {"prompt_tokens": 2150, "completion_tokens": 96, "total_tokens": 2246},
    },
    {"text": "Noted: the relay leaves at dawn."},
]


def test_a_reply_streams_live_to_everyone_watching(browser, horsie):
    from playwright.sync_api import expect

    alice = logged_in(browser, horsie, "alice")
    alice.get_by_role("link", name="New session").first.click()
    alice.get_by_label("Title").fill("Pony Express relay plan")
    expect(alice.get_by_label("Model card")).to_have_value(re.compile(r"\d+"))
    alice.get_by_role("button", name="Create session").click()
    expect(alice).to_have_url(re.compile(r"/sessions/\d+/$"))
    expect(alice.get_by_role("heading", name="Pony Express relay plan")).to_be_visible()
    watching(alice)

    bob = logged_in(browser, horsie, "bob")
    bob.goto(alice.url)
    watching(bob)

    composer = alice.get_by_label("Message")
    composer.fill("Plan the relay from St. Joseph to Sacramento.")
    composer.press("Enter")

    for page in (alice, bob):
        expect(page.locator(".entry-user .body")).to_have_text(
            "Plan the relay from St. Joseph to Sacramento."
        )
        expect(page.locator(".entry-user .who")).to_have_text("alice")
        reply = page.locator("article.entry-assistant .markdown")
        expect(reply).to_contain_text("Here is a plan for the Pony Express relay")
        expect(reply.locator("strong")).to_have_text("Pony Express")
        expect(reply.locator("table td").first).to_have_text("St. Joseph → Fort Kearny")
        expect(page.locator("#streaming")).to_be_hidden()
        expect(page.locator("#status-badge")).to_have_text("idle")
        context = page.request.get(
            re.sub(r"/sessions/(\d+)/$", r"/api/v1/sessions/\1/context", page.url)
        )
        total = context.json()["tokens"]  # the meter shows what the context view counts
        expect(page.locator(".meter-numbers")).to_contain_text(f"{total:,} / 8,000")
        streamed = page.evaluate("window.horsieStream")
        assert streamed and REPLY.startswith(streamed[0]) and len(streamed[0]) < len(REPLY)
        assert all(REPLY.startswith(text) for text in streamed)
    expect(composer).to_have_value("")

    composer.fill("/hel")
    expect(alice.locator("#composer-complete li")).to_have_count(1)
    composer.press("Tab")
    expect(composer).to_have_value("/help ")
    composer.press("Enter")
    expect(alice.locator("#composer-help")).to_contain_text("/rewind SEQ [message]")
    expect(bob.locator("#composer-help")).to_have_count(0)
    composer.fill("/nope")
    composer.press("Enter")
    for page in (alice, bob):
        expect(page.locator(".entry-command .body")).to_have_text("/nope")
        expect(page.locator(".entry-notice .notice-code")).to_have_text("unknown_command")

    for page in (alice, bob):
        page.context.close()


def new_session(horsie, title):
    return horsie.api("POST", "/sessions", "alice", {"title": title})["id"]


def shown_seqs(page):
    return page.evaluate(
        "[...document.querySelectorAll('#entries > .entry')].map(e => +e.dataset.seq)"
    )


def test_an_empty_message_is_refused_in_place(browser, horsie):
    from playwright.sync_api import expect

    page = logged_in(browser, horsie, "bob")
    page.goto(f"{horsie.url}/sessions/{new_session(horsie, 'Quiet session')}/")
    watching(page)
    page.get_by_label("Message").fill("   ")
    page.get_by_label("Message").press("Enter")
    expect(page.locator("#composer-error")).to_have_text("The message is empty.")
    assert shown_seqs(page) == []
    page.context.close()


def test_a_dropped_socket_catches_up_without_gaps_or_duplicates(browser, horsie):
    """While bob's socket is down the session moves on; on reconnect he gets exactly the rest."""
    from playwright.sync_api import expect

    session_id = new_session(horsie, "Flaky network")
    page = logged_in(browser, horsie, "bob")
    routes, state = [], {"down": False}

    def route(ws):
        routes.append(ws)
        if state["down"]:
            ws.close(code=1011, reason="unreachable")  # the server is away: retry later
        else:
            ws.connect_to_server()

    page.route_web_socket(re.compile(r"/ws/v1/sessions/"), route)
    page.goto(f"{horsie.url}/sessions/{session_id}/")
    watching(page)
    horsie.api("POST", f"/sessions/{session_id}/messages", "alice", {"text": "/nope"})
    expect(page.locator(".entry-notice")).to_have_count(1)

    state["down"] = True
    routes[-1].close(code=1006, reason="dropped")
    expect(page.locator("#live")).not_to_have_attribute("data-live", "open")
    page.get_by_label("Message").fill("typed while away")
    done = horsie.api(
        "POST", f"/sessions/{session_id}/messages?wait=20", "alice", {"text": "Leave at dawn?"}
    )
    assert done["status"] == "idle" and [e["seq"] for e in done["entries"]] == [3, 4]
    state["down"] = False
    watching(page)
    reply = page.locator("article.entry-assistant .markdown")
    expect(reply).to_have_text(done["entries"][1]["content"])
    assert shown_seqs(page) == [1, 2, 3, 4]
    assert routes[0].url.endswith("?after=0") and routes[-1].url.endswith("?after=2")
    expect(page.get_by_label("Message")).to_have_value("typed while away")
    page.context.close()


def test_earlier_entries_load_above_in_order(browser, horsie):
    from playwright.sync_api import expect

    session_id = new_session(horsie, "A long log")
    for _ in range(30):  # each unknown command appends two entries: the command and a notice
        horsie.api("POST", f"/sessions/{session_id}/messages", "alice", {"text": "/nope"})
    page = logged_in(browser, horsie, "alice")
    page.goto(f"{horsie.url}/sessions/{session_id}/")
    assert shown_seqs(page) == list(range(11, 61))
    expect(page.get_by_role("button", name="Load earlier entries")).to_have_count(1)
    page.locator("#transcript").evaluate("el => { el.scrollTop = 0; }")  # no click: scrolling loads
    expect(page.locator("#entries > .entry")).to_have_count(60)
    assert shown_seqs(page) == list(range(1, 61))
    expect(page.get_by_role("button", name="Load earlier entries")).to_have_count(0)
    page.context.close()
