"""A password someone else set works once: the browser goes nowhere but the change form until
it is replaced. Bearer tokens are unaffected; the browser's own session cannot use the API."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from teams_app.services import token_issue

pytestmark = pytest.mark.django_db

NEW = "a-password-of-my-own-42"


def log_in(client, username, password):
    r = client.post("/login/", {"username": username, "password": password})
    assert r.status_code == 302 and r.url == "/", r.content[:300]


def assert_held(client, session_id):
    for path in ("/", "/sessions/new/", f"/sessions/{session_id}/", "/teams/"):
        r = client.get(path)
        assert (r.status_code, r.url) == (302, "/password/"), path
    r = client.get("/teams/", headers={"HX-Request": "true"})
    assert r.headers["HX-Redirect"] == "/password/"
    r = client.get("/api/v1/sessions")
    assert r.status_code == 403 and "one-time password" in r.json()["detail"]
    assert client.post("/teams/switch/", {"team": 1}).status_code == 302


def change(client, old):
    form = {"old_password": old, "new_password1": NEW, "new_password2": NEW}
    page = client.get("/password/")
    assert page.status_code == 200 and b"set by someone else" in page.content
    bad = client.post("/password/", {**form, "new_password2": "not the same"})
    assert bad.status_code == 200, "the form again, with its error"
    r = client.post("/password/", form)
    assert (r.status_code, r.url) == (302, "/")


def test_a_member_added_by_an_admin_changes_the_password_first(api_for, client, session):
    made = api_for("alice").post("/team/members", {"username": "dave"}).json()
    log_in(client, "dave", made["password"])
    assert_held(client, session.pk)
    from django.contrib.auth import get_user_model

    token = token_issue(user=get_user_model().objects.get(username="dave"))
    r = client.get("/api/v1/sessions", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200, "API tokens are not logins"
    r = client.get("/api/v1/sessions", headers={"Authorization": "Bearer hrs_not-a-token"})
    assert r.status_code == 403, "a bad token does not fall back to the held session"
    change(client, made["password"])
    assert client.get("/").status_code == 200, "still logged in, free to go"
    assert client.get(f"/sessions/{session.pk}/").status_code == 200
    assert client.get("/api/v1/sessions").status_code == 200
    client.logout()
    assert not client.login(username="dave", password=made["password"]), "spent"
    log_in(client, "dave", NEW)
    assert client.get("/").status_code == 200


def test_horsie_user_passwords_are_one_time_too(client, personas, session):
    out = io.StringIO()
    call_command("horsie_user", "bob", "--team", "acme", stdout=out)
    password = out.getvalue().strip().splitlines()[-1]
    log_in(client, "bob", password)
    assert_held(client, session.pk)
    change(client, password)
    assert client.get(f"/sessions/{session.pk}/").status_code == 200


def test_logging_out_stays_possible_and_others_are_not_held(client, personas):
    out = io.StringIO()
    call_command("horsie_user", "hana", "--team", "acme", stdout=out)
    log_in(client, "hana", out.getvalue().strip().splitlines()[-1])
    assert client.post("/logout/").status_code == 302
    assert client.get("/").url.startswith("/login/")
    log_in(client, "alice", "alice-pass-123")
    assert client.get("/").status_code == 200
    page = client.get("/password/")
    assert page.status_code == 200 and b"set by someone else" not in page.content


@pytest.mark.django_db(transaction=True)
async def test_a_held_cookie_opens_no_socket(personas, session):
    from asgiref.sync import sync_to_async
    from channels.testing import WebsocketCommunicator
    from django.test import Client

    from horsie_site.asgi import application
    from teams_app.services import password_one_time

    browser = Client()
    bob = personas["bob"][0]
    await sync_to_async(password_one_time)(user=bob)
    await sync_to_async(browser.force_login)(bob)
    cookie = f"sessionid={browser.cookies['sessionid'].value}".encode()
    headers = [(b"cookie", cookie), (b"origin", b"http://testserver")]
    socket = WebsocketCommunicator(application, f"/ws/v1/sessions/{session.pk}/", headers)
    connected, _ = await socket.connect()
    assert connected
    message = await socket.receive_output(timeout=5)
    assert message.get("code") == 4401, message
    await socket.disconnect()
