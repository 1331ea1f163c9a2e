"""Shared set-up: the personas, API clients, and a scripted model in place of the wire.

alice and bob are teammates on "acme": alice is its admin (its first member), bob a member;
charlie is globex's admin and must see none of acme's objects. Most web tests run turns in-process against `ScriptedProvider`, which records what
the model was sent.
"""

from __future__ import annotations

import os
import uuid

import pytest

os.environ.setdefault("HORSIE_REDIS_PREFIX", f"horsie-test-{uuid.uuid4().hex[:8]}")


@pytest.fixture(autouse=True, scope="session")
def short_lived_connections(django_db_setup):
    """Turn threads open their own connections: close them after use, so the test database
    can be dropped at the end of the run."""
    from django.db import connections

    for alias in connections:
        connections.settings[alias]["CONN_MAX_AGE"] = 0


@pytest.fixture
def personas(db):
    from teams_app.services import member_ensure, token_issue

    alice, acme = member_ensure(username="alice", team_name="acme", password="alice-pass-123")
    bob, _ = member_ensure(username="bob", team_name="acme", password="bob-pass-123")
    charlie, globex = member_ensure(
        username="charlie", team_name="globex", password="charlie-pass-123"
    )
    return {
        "alice": (alice, token_issue(user=alice)),
        "bob": (bob, token_issue(user=bob)),
        "charlie": (charlie, token_issue(user=charlie)),
        "acme": acme,
        "globex": globex,
    }


class Api:
    """A Django test client that speaks JSON with a bearer token."""

    def __init__(self, client, token):
        self.client = client
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def call(self, method, path, body=None, **kwargs):
        import json

        data = json.dumps(body) if body is not None and not isinstance(body, str) else body
        return getattr(self.client, method)(
            f"/api/v1{path}",
            data=data,
            content_type="application/json",
            headers=self.headers,
            **kwargs,
        )

    def get(self, path, **kw):
        return self.call("get", path, **kw)

    def post(self, path, body=None, **kw):
        return self.call("post", path, body if body is not None else {}, **kw)

    def patch(self, path, body=None, **kw):
        return self.call("patch", path, body, **kw)

    def delete(self, path, **kw):
        return self.call("delete", path, **kw)


@pytest.fixture
def api_for(client, personas):
    def make(name):
        return Api(client, personas[name][1])

    return make


@pytest.fixture
def scripted(monkeypatch, settings):
    """Every session's model is one shared ScriptedProvider; turns run in-process."""
    from harness.testing import ScriptedProvider, reply
    from horsie_site import wiring

    settings.HORSIE = {**settings.HORSIE, "DISPATCH": "inprocess"}
    provider = ScriptedProvider(default=reply("Scripted reply."))
    monkeypatch.setattr(wiring, "provider_for", lambda card: provider)
    return provider


@pytest.fixture
def card(personas):
    from sessions_app.models import ModelCard

    return ModelCard.objects.create(
        team=personas["acme"],
        name="Test card",
        wire="openai_chat",
        model="scripted",
        context_window=8000,
        max_output_tokens=256,
    )


@pytest.fixture
def session(personas, card):
    from sessions_app.services import session_create

    return session_create(
        user=personas["alice"][0],
        team=personas["acme"],
        fields={"title": "Acme work", "model": card},
    )


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
