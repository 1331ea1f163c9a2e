"""Edges seen from outside, against a real `daphne` process: websocket refusals through a real
handshake, and a provider that reports nonsense usage.

A refused socket is accepted and then closed (4401 no or bad token, 4404 not found or not
yours), so a client reads the reason instead of a failed handshake. A token needs no
`Origin`; the session cookie counts only from an allowed origin. A reply whose usage is
nonsense must leave the team's list, the session's page, `/state` and `/context` answering,
release the lease, and the next message must be answered.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
import requests
import websockets

from tests.support.stack import Stack

POISONED = {"prompt_tokens": "abc", "completion_tokens": -7, "total_tokens": None}


@pytest.fixture(scope="module")
def stack():
    stack = Stack()
    try:
        stack.start_web()
        stack.model = stack.scripted_model(
            [{"text": "First reply.", "usage": POISONED}, {"text": "Second reply.", "repeat": True}]
        )
        stack.session = stack.session_on(stack.model, title="Live edges")
        yield stack
    finally:
        stack.close()


def ws_url(stack: Stack, session: int, token: str | None) -> str:
    query = f"?token={token}" if token is not None else ""
    return f"ws://127.0.0.1:{stack.port}/ws/v1/sessions/{session}/{query}"


async def first_event_or_close(url: str, **options: Any) -> dict[str, Any] | int:
    """The socket's first event, or the close code when the server closes it instead."""
    async with asyncio.timeout(20), websockets.connect(url, **options) as ws:
        try:
            return dict(json.loads(await ws.recv()))
        except websockets.ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd else 1006  # 1006: no close frame


def outcome(url: str, **options: Any) -> dict[str, Any] | int:
    return asyncio.run(first_event_or_close(url, **options))


def logged_in_cookie(stack: Stack) -> str:
    """alice's session cookie, from the login form like a browser."""
    stack.manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User; u = User.objects.get(username='alice'); "
        "u.set_password('alice-live-pass'); u.save()",
    )
    browser = requests.Session()
    form = browser.get(f"{stack.url}/login/", timeout=10).text
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert csrf, form
    done = browser.post(
        f"{stack.url}/login/",
        data={"username": "alice", "password": "alice-live-pass", "csrfmiddlewaretoken": csrf[1]},
        timeout=10,
        allow_redirects=False,
    )
    assert done.status_code == 302, done.text
    return f"sessionid={browser.cookies['sessionid']}"


def test_token_sockets_need_no_origin_and_refusals_close_with_a_code(stack):
    session = stack.session
    assert outcome(ws_url(stack, session, stack.token))["type"] in ("entry", "status")
    elsewhere = {"origin": "https://elsewhere.example"}
    assert outcome(ws_url(stack, session, stack.token), **elsewhere)["type"] in ("entry", "status")
    assert outcome(ws_url(stack, session, "hrs_wrong")) == 4401
    assert outcome(ws_url(stack, session, None)) == 4401
    assert outcome(ws_url(stack, session, None), origin="http://127.0.0.1") == 4401
    assert outcome(ws_url(stack, 99999999, stack.token)) == 4404
    charlie = stack.manage("horsie_token", "charlie", "--team", "globex").strip().split("\n")[-1]
    assert outcome(ws_url(stack, session, charlie)) == 4404
    assert outcome(f"ws://127.0.0.1:{stack.port}/ws/v1/nothing/?token={stack.token}") == 4404


def test_the_session_cookie_counts_only_from_an_allowed_origin(stack):
    cookie = {"additional_headers": {"Cookie": logged_in_cookie(stack)}}
    url = ws_url(stack, stack.session, None)
    assert outcome(url, origin=f"http://127.0.0.1:{stack.port}", **cookie)["type"] in (
        "entry",
        "status",
    )
    assert outcome(url, origin="https://elsewhere.example", **cookie) == 4401
    assert outcome(url, **cookie) == 4401  # no Origin: not a browser, so no cookie


def test_a_reply_with_nonsense_usage_breaks_nothing(stack):
    session = stack.session
    status, body = stack.api("POST", f"/sessions/{session}/messages?wait=60", {"text": "Hello"})
    assert status == 200, body
    assert body["status"] == "idle"
    assert [e["content"] for e in body["entries"] if e["kind"] == "assistant"] == ["First reply."]
    for path in ("/sessions", f"/sessions/{session}", f"/sessions/{session}/state",
                 f"/sessions/{session}/context", f"/sessions/{session}/entries"):  # fmt: skip
        status, answer = stack.api("GET", path)
        assert status == 200, (path, answer)
    assert stack.sql(f"SELECT lease_owner FROM sessions_app_session WHERE id = {session}") == [
        (None,)
    ]
    browser = requests.Session()
    browser.headers["Cookie"] = logged_in_cookie(stack)
    page = browser.get(f"{stack.url}/sessions/{session}/", timeout=10)
    assert page.status_code == 200 and "First reply." in page.text
    assert browser.get(f"{stack.url}/", timeout=10).status_code == 200
    status, body = stack.api("POST", f"/sessions/{session}/messages?wait=60", {"text": "Again"})
    assert status == 200 and body["status"] == "idle", body
    assert [e["content"] for e in body["entries"] if e["kind"] == "assistant"] == ["Second reply."]
