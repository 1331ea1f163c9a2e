"""The state panel and the text in flight, in a real Chromium against a real server.

The scripted model writes a task list, arms a timer and asks a question; a teammate watching
sees each of them arrive live, the timer counting down, and the question leave both pages
once it is answered. A reply whose socket drops mid-stream is shown exactly once: the text in
flight comes back at offset 0 on reconnect and only what the page lacks is added.

The first test takes `docs/screenshot.png`, the picture the README's tour shows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .conftest import WAIT_MS, logged_in, watching

pytestmark = pytest.mark.e2e

TASKS = [
    {"text": "Hire riders for every leg", "status": "done"},
    {"text": "Choose the route across the Sierra", "status": "in_progress"},
    {"text": "Stock the relay stations", "status": "pending"},
]
TIMER = "Check on the relay horses"
QUESTION = "Which route should the riders take over the Sierra?"
OPTIONS = ["Northern, by Carson Pass", "Southern, by Johnson Pass"]
SLOW_REPLY = (
    "The mochila left St. Joseph at a gallop. Rider after rider carried it west, changing "
    "horses at every station, through Fort Kearny, past Chimney Rock, over South Pass and on "
    "to Salt Lake City, then across the desert to Carson City and over the Sierra, until the "
    "last rider rode into Sacramento ten days later, cheered by the whole town."
)


def call(call_id, name, arguments):
    return {"id": call_id, "name": name, "arguments": json.dumps(arguments)}


# The model server plays these in order, one per model call, as the tests below run in order.
SCRIPT = [
    # The tour: three tool calls, one per model call, then the reply to the answer.
    {"text": "First, a plan.", "tool_calls": [call("c-todo", "todo_write", {"tasks": TASKS})]},
    {"tool_calls": [call("c-timer", "set_timer", {"seconds": 600, "message": TIMER})]},
    {"tool_calls": [call("c-ask", "ask_user", {"question": QUESTION, "options": OPTIONS})]},
    {"text": "Carson Pass it is: the riders leave at dawn."},
    # An empty answer, refused; then a typed one.
    {"tool_calls": [call("c-ask2", "ask_user", {"question": "Leave at dawn or at noon?"})]},
    {"text": "Noon it is."},
    # A slow reply, whose socket drops mid-stream.
    {"text": SLOW_REPLY, "pause": 0.05},
]
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshot.png"

# Records every value the live indicator takes, so a test can wait for a reconnect.
WATCH_LIVE = """
document.addEventListener("DOMContentLoaded", () => {
  window.horsieLive = [];
  const live = document.getElementById("live");
  if (!live) return;
  new MutationObserver(() => window.horsieLive.push(live.dataset.live))
    .observe(live, {attributes: true, attributeFilter: ["data-live"]});
});
"""


def new_session(horsie, title):
    return horsie.api("POST", "/sessions", "alice", {"title": title})["id"]


def session_page(browser, horsie, username, session_id, viewport=None):
    page = logged_in(browser, horsie, username, viewport)
    page.goto(f"{horsie.url}/sessions/{session_id}/")
    watching(page)
    return page


def answer_entries(horsie, session_id):
    entries = horsie.api("GET", f"/sessions/{session_id}/entries", "alice")["entries"]
    return [e for e in entries if e["kind"] == "answer"]


def test_tasks_timers_and_questions_arrive_live_and_an_answer_settles(browser, horsie):
    from playwright.sync_api import expect

    session_id = new_session(horsie, "Pony Express: crossing the Sierra")
    alice = session_page(browser, horsie, "alice", session_id, {"width": 1280, "height": 800})
    bob = session_page(browser, horsie, "bob", session_id)
    bob.evaluate("window.sameDocument = true")  # gone if the page reloads
    for page in (alice, bob):
        expect(page.locator("[data-empty=tasks]")).to_have_text("No tasks")
        expect(page.locator("[data-empty=questions]")).to_be_visible()

    alice.get_by_label("Message").fill("Plan the relay over the Sierra.")
    alice.get_by_label("Message").press("Enter")

    for page in (alice, bob):
        tasks = page.locator("#task-list .task")
        expect(tasks.locator(".task-text")).to_have_text([t["text"] for t in TASKS])
        statuses = [tasks.nth(n).get_attribute("data-status") for n in range(len(TASKS))]
        assert statuses == ["done", "in_progress", "pending"]
        expect(page.locator("[data-empty=tasks]")).to_be_hidden()
        expect(page.locator("[data-count=tasks]")).to_have_text("3")
        timer = page.locator("#timer-list .timer")
        expect(timer.locator(".timer-message")).to_have_text(TIMER)
        expect(timer.locator(".timer-countdown")).to_have_text(
            re.compile(r"^in (9:[0-5]\d|10:00)$")
        )
        question = page.locator("#question-list .question")
        expect(question.locator(".question-text")).to_have_text(QUESTION)
        expect(question.locator(".option")).to_have_text(OPTIONS)
        expect(page.locator("#status-badge")).to_have_text("waiting")

    countdown = bob.locator("#timer-list .timer-countdown")
    first = countdown.text_content()
    expect(countdown).not_to_have_text(first)  # it counts down, once a second
    assert bob.evaluate("window.sameDocument") is True

    SCREENSHOT.parent.mkdir(exist_ok=True)
    alice.screenshot(path=str(SCREENSHOT))

    alice.get_by_role("button", name=OPTIONS[0]).click()
    for page in (alice, bob):
        expect(page.locator("#question-list .question")).to_have_count(0)
        expect(page.locator("[data-empty=questions]")).to_have_text("No questions")
        answer = page.locator("article.entry-answer")
        expect(answer.locator(".body")).to_have_text(OPTIONS[0])
        expect(answer.locator("[data-field=author]")).to_have_text("alice")
        expect(answer.locator(".answer-to")).to_have_text(QUESTION)
        expect(page.locator("article.entry-assistant .markdown").last).to_have_text(
            "Carson Pass it is: the riders leave at dawn."
        )
        expect(page.locator("#status-badge")).to_have_text("idle")
        expect(page.locator("#task-list .task")).to_have_count(3)  # the state carries on
        expect(page.locator("#timer-list .timer")).to_have_count(1)
    assert bob.evaluate("window.sameDocument") is True
    assert [e["content"] for e in answer_entries(horsie, session_id)] == [OPTIONS[0]]
    for page in (alice, bob):
        page.context.close()


def test_an_empty_answer_is_refused_in_place_and_stores_nothing(browser, horsie):
    from playwright.sync_api import expect

    session_id = new_session(horsie, "Departure time")
    done = horsie.api(
        "POST", f"/sessions/{session_id}/messages?wait=20", "alice", {"text": "When do we go?"}
    )
    assert done["status"] == "waiting", done
    page = session_page(browser, horsie, "bob", session_id)
    question = page.locator("#question-list .question")
    expect(question.locator(".question-text")).to_have_text("Leave at dawn or at noon?")
    expect(question.locator(".option")).to_have_count(0)  # no options: only the text field

    question.get_by_label("Your answer").fill("   ")
    question.get_by_label("Your answer").press("Enter")
    expect(question.locator(".answer-error")).to_have_text("The answer is empty.")
    expect(question).to_have_count(1)
    expect(question).not_to_have_class(re.compile("answered"))
    assert answer_entries(horsie, session_id) == []
    state = horsie.api("GET", f"/sessions/{session_id}/state", "alice")
    assert [q["question"] for q in state["questions"]] == ["Leave at dawn or at noon?"]

    question.get_by_label("Your answer").fill("At noon")
    question.get_by_role("button", name="Answer").click()
    expect(page.locator("#question-list .question")).to_have_count(0)
    expect(page.locator("article.entry-answer .body")).to_have_text("At noon")
    expect(page.locator("article.entry-assistant .markdown").last).to_have_text("Noon it is.")
    assert [e["content"] for e in answer_entries(horsie, session_id)] == ["At noon"]
    page.context.close()


def test_a_socket_dropped_mid_stream_shows_the_reply_exactly_once(browser, horsie):
    from playwright.sync_api import expect

    session_id = new_session(horsie, "The long ride")
    page = logged_in(browser, horsie, "bob")
    page.context.add_init_script(WATCH_LIVE)
    routes, frames = [], []

    def route(ws):
        routes.append(ws)
        server = ws.connect_to_server()
        if len(routes) > 1:  # after the drop: record what the server sends, and pass it on

            def forward(message):
                if message.startswith("{"):  # deltas are JSON; the rest, HTML fragments
                    frames.append(json.loads(message))
                ws.send(message)

            server.on_message(forward)

    page.route_web_socket(re.compile(r"/ws/v1/sessions/"), route)
    page.goto(f"{horsie.url}/sessions/{session_id}/")
    watching(page)
    horsie.api("POST", f"/sessions/{session_id}/messages", "alice", {"text": "Tell the story."})

    bubble = "document.querySelector('#streaming .body').textContent"
    page.wait_for_function(f"{bubble}.length >= 40", timeout=WAIT_MS)
    routes[-1].close(code=1011, reason="dropped mid-stream")
    page.wait_for_function(
        "window.horsieLive.includes('reconnecting') && window.horsieLive.at(-1) === 'open'",
        timeout=WAIT_MS,
    )
    seen_at_reconnect = len(page.evaluate("window.horsieStream"))
    shown = page.evaluate(f"{bubble}.length")
    page.wait_for_function(f"{bubble}.length > {shown}", timeout=WAIT_MS)  # streaming on

    reply = page.locator("article.entry-assistant")
    expect(reply).to_have_count(1)
    expect(reply.locator(".markdown")).to_have_text(SLOW_REPLY)
    expect(page.locator("#streaming")).to_be_hidden()
    assert page.locator("#entries").text_content().count("cheered by the whole town") == 1

    streamed = page.evaluate("window.horsieStream")
    assert len(streamed) > seen_at_reconnect, "the reply went on streaming after the reconnect"
    doubled = [text for text in streamed if not SLOW_REPLY.startswith(text)]
    assert doubled == [], "the bubble only ever shows a prefix of the reply"
    in_flight = [f for f in frames if f["type"] == "delta" and f["offset"] == 0]
    assert len(in_flight) == 1 and 0 < len(in_flight[0]["text"]) < len(SLOW_REPLY)
    assert SLOW_REPLY.startswith(in_flight[0]["text"])
    assert routes[-1].url.endswith("?after=1")  # the user message had arrived: catch up after it
    page.context.close()
