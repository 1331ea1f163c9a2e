"""The page rendered on the server and kept live over htmx's `ws` extension, in Chromium
against a real daphne: two teammates see the same entries, panel and meter with no reload,
across a dropped socket; a half-typed answer survives a live update; on a phone the header
stays in view. The run prints how many lines of JavaScript the page needs.

Takes `docs/phone.png`, the narrow-screen picture in the README.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from .conftest import logged_in, watching

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SCRIPT_FILE = ROOT / "static" / "horsie-session.js"
PHONE = ROOT / "docs" / "phone.png"
TASKS = [
    {"text": "Saddle the horses", "status": "done"},
    {"text": "Ride to Fort Kearny", "status": "in_progress"},
]
FIRST, SECOND = "Which river crossing?", "Which horse for the last leg?"


def call(call_id, name, arguments):
    return {"id": call_id, "name": name, "arguments": json.dumps(arguments)}


SCRIPT = [
    {"tool_calls": [call("c-todo", "todo_write", {"tasks": TASKS})]},
    {"text": "Tasks are written down.", "usage": {"prompt_tokens": 900, "completion_tokens": 7}},
    {"text": "Leaving at dawn, then."},
    {
        "tool_calls": [
            call("c-q1", "ask_user", {"question": FIRST}),
            call("c-q2", "ask_user", {"question": SECOND}),
        ]
    },
    {"text": "The Platte it is."},
]


def new_session(horsie, title):
    return horsie.api("POST", "/sessions", "alice", {"title": title})["id"]


def seqs(page):
    return page.evaluate(
        "[...document.querySelectorAll('#entries > .entry')].map(e => +e.dataset.seq)"
    )


def api_seqs(horsie, session_id):
    return [
        e["seq"] for e in horsie.api("GET", f"/sessions/{session_id}/entries", "alice")["entries"]
    ]


def test_two_teammates_see_the_same_page_live_across_a_dropped_socket(browser, horsie):
    from playwright.sync_api import expect

    session_id = new_session(horsie, "Live for two")
    alice = logged_in(browser, horsie, "alice")
    bob = logged_in(browser, horsie, "bob")
    routes, state = [], {"down": False}

    def route(ws):
        routes.append(ws)
        if state["down"]:
            ws.close(code=1011, reason="unreachable")
        else:
            ws.connect_to_server()

    bob.route_web_socket(re.compile(r"/ws/v1/sessions/\d+/ui/"), route)
    for page in (alice, bob):
        page.goto(f"{horsie.url}/sessions/{session_id}/")
        watching(page)
        page.evaluate("window.sameDocument = true")  # gone if the page reloads

    alice.get_by_label("Message").fill("Plan the ride.")
    alice.get_by_label("Message").press("Enter")
    for page in (alice, bob):
        expect(page.locator("article.entry-assistant .markdown")).to_have_text(
            "Tasks are written down."
        )
        expect(page.locator("#task-list .task-text")).to_have_text([t["text"] for t in TASKS])
        expect(page.locator("#status-badge")).to_have_text("idle")
    tokens = horsie.api("GET", f"/sessions/{session_id}/context", "alice")["tokens"]
    for page in (alice, bob):
        expect(page.locator(".meter-numbers")).to_contain_text(f"{tokens:,} / 8,000")
        expect(page.locator("#prompt-chart .state-count")).to_have_text("2")  # two model calls
    assert seqs(alice) == seqs(bob) == api_seqs(horsie, session_id)

    state["down"] = True
    routes[-1].close(code=1006, reason="dropped")
    expect(bob.locator("#live")).not_to_have_attribute("data-live", "open")
    done = horsie.api(
        "POST", f"/sessions/{session_id}/messages?wait=20", "alice", {"text": "When?"}
    )
    assert done["status"] == "idle"
    expect(alice.locator("article.entry-assistant .markdown").last).to_have_text(
        "Leaving at dawn, then."
    )
    state["down"] = False
    watching(bob)
    expect(bob.locator("article.entry-assistant .markdown").last).to_have_text(
        "Leaving at dawn, then."
    )
    expected = api_seqs(horsie, session_id)
    assert expected == list(range(1, len(expected) + 1))
    assert seqs(alice) == seqs(bob) == expected  # no gap, no duplicate
    assert routes[-1].url.endswith(f"?after={done['entries'][0]['seq'] - 1}")
    tokens = horsie.api("GET", f"/sessions/{session_id}/context", "alice")["tokens"]
    for page in (alice, bob):
        expect(page.locator(".meter-numbers")).to_contain_text(f"{tokens:,} / 8,000")
        expect(page.locator("#prompt-chart .state-count")).to_have_text("3")
        assert page.evaluate("window.sameDocument") is True
        page.context.close()


def test_a_half_typed_answer_survives_a_live_update(browser, horsie):
    from playwright.sync_api import expect

    session_id = new_session(horsie, "Two questions")
    done = horsie.api(
        "POST", f"/sessions/{session_id}/messages?wait=20", "alice", {"text": "Ask me"}
    )
    assert done["status"] == "waiting", done
    bob = logged_in(browser, horsie, "bob")
    bob.goto(f"{horsie.url}/sessions/{session_id}/")
    watching(bob)
    questions = bob.locator("#question-list .question")
    expect(questions.locator(".question-text")).to_have_text([FIRST, SECOND])
    second = questions.filter(has_text=SECOND).get_by_label("Your answer")
    second.fill("The grey mare, or ma")
    second.focus()

    first_id = questions.first.get_attribute("data-key")
    horsie.api(
        "POST",
        f"/sessions/{session_id}/answers",
        "alice",
        {"question": first_id, "text": "The Platte"},
    )
    expect(bob.locator("article.entry-assistant .markdown").last).to_have_text("The Platte it is.")
    expect(questions.locator(".question-text")).to_have_text([SECOND])  # re-rendered live
    expect(second).to_have_value("The grey mare, or ma")
    expect(second).to_be_focused()
    bob.context.close()


def test_on_a_phone_the_header_stays_in_view_and_times_are_local(browser, horsie, capsys):
    from playwright.sync_api import expect

    session_id = new_session(horsie, "Pony Express, on the road")
    for _ in range(12):
        horsie.api("POST", f"/sessions/{session_id}/messages", "alice", {"text": "/nope"})
    bob = logged_in_in_zone(browser, horsie, "bob", "America/Denver")
    bob.goto(f"{horsie.url}/sessions/{session_id}/")
    watching(bob)
    bob.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    bob.wait_for_function("window.scrollY > 300")
    head = bob.locator(".session-head").bounding_box()
    assert head is not None and -1 <= head["y"] <= 1 and head["height"] < 200, head
    expect(bob.locator("#status-badge")).to_be_in_viewport()
    expect(bob.locator(".meter-numbers")).to_be_in_viewport()
    bob.screenshot(path=str(PHONE))

    entry = horsie.api("GET", f"/sessions/{session_id}/entries", "alice")["entries"][-1]
    local = datetime.fromisoformat(entry["created_at"]).astimezone(ZoneInfo("America/Denver"))
    when = bob.locator(f"#entry-{entry['seq']} time.when")
    shown = when.text_content().replace("\u202f", " ")
    assert shown == local.strftime("%-I:%M %p"), shown
    assert re.search(r"M[SD]T", when.get_attribute("title") or ""), when.get_attribute("title")
    bob.context.close()

    lines = len(SCRIPT_FILE.read_text().splitlines())
    with capsys.disabled():
        print(f"\nstatic/horsie-session.js: {lines} lines of JavaScript")
    assert lines < 150


def logged_in_in_zone(browser, horsie, username, zone):
    from .conftest import PASSWORDS, WAIT_MS

    context = browser.new_context(
        viewport={"width": 375, "height": 740}, timezone_id=zone, locale="en-US"
    )
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.goto(f"{horsie.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORDS[username])
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/$"))
    return page


CONTRAST = """el => {
  const rgb = (c) => c.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number);
  const lum = (c) => { const [r, g, b] = rgb(c).map((v) => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  let back = el;
  while (back && getComputedStyle(back).backgroundColor.endsWith(", 0)")) back = back.parentElement;
  const [a, b] = [lum(getComputedStyle(el).color), lum(getComputedStyle(back).backgroundColor)];
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}"""


def test_the_composer_and_panel_by_keyboard_and_errors_in_high_contrast(browser, horsie):
    from playwright.sync_api import expect

    session_id = new_session(horsie, "By keyboard")
    page = logged_in(browser, horsie, "bob")
    page.goto(f"{horsie.url}/sessions/{session_id}/")
    watching(page)
    skip = page.get_by_role("link", name="Skip to the message box")
    skip.focus()
    expect(skip).to_be_in_viewport()
    page.keyboard.press("Enter")
    composer = page.get_by_label("Message")
    expect(composer).to_be_focused()
    page.keyboard.type("/re")
    listed = page.get_by_role("listbox", name="Slash commands").get_by_role("option")
    expect(listed).to_have_count(1)
    page.keyboard.press("ArrowDown")
    expect(listed).to_have_attribute("aria-selected", "true")
    page.keyboard.press("Enter")
    expect(composer).to_have_value("/rewind ")
    page.keyboard.press("Control+a")
    page.keyboard.type("   ")
    page.keyboard.press("Enter")
    error = page.locator("#composer-error")
    expect(error).to_have_text("The message is empty.")
    assert error.evaluate(CONTRAST) >= 4.5

    page.get_by_role("link", name="Skip to the side panel").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#state-panel")).to_be_focused()
    expect(page.locator("#state-panel")).to_be_in_viewport()
    page.context.close()
