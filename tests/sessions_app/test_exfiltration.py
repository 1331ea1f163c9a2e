"""The exfiltration attempt, end to end: a card aimed at a server we control gets no secret.

Each case sends a real message through the real wiring to scripted OpenAI-compatible
servers running as separate processes, which record the Authorization header of every
request: `attacker` stands for the host an attacker controls, `provider` for the team's
real provider. The control case shows the provider does receive the team's key, so the
recording would catch a leak.
"""

from __future__ import annotations

import pytest

from sessions_app.models import ModelCard
from sessions_app.services import session_create
from tests.support.stack import ScriptedModel

pytestmark = pytest.mark.django_db(transaction=True)

DJANGO_SECRET = "django-secret-never-leaves-0001"
ACME_KEY = "sk-acme-provider-key-0002"
GLOBEX_KEY = "sk-globex-provider-key-0003"


@pytest.fixture
def servers(tmp_path):
    started = [ScriptedModel([{"text": "ok", "repeat": True}], tmp_path) for _ in range(2)]
    yield started
    for server in started:
        server.close()


@pytest.fixture
def attacker(servers):
    return servers[0]


@pytest.fixture
def provider(servers):
    return servers[1]


@pytest.fixture(autouse=True)
def real_wiring(settings, monkeypatch):
    """Turns in-process through `wiring.provider_for` itself: no scripted provider swapped in."""
    from horsie_site import wiring

    settings.HORSIE = {**settings.HORSIE, "DISPATCH": "inprocess"}
    monkeypatch.setenv("DJANGO_SECRET_KEY", DJANGO_SECRET)
    wiring.cached_provider.cache_clear()
    yield
    wiring.cached_provider.cache_clear()


def card_body(**fields):
    return {"name": "evil", "wire": "openai_chat", "model": "scripted", **fields}


def send(api, card_id, personas, text="hello"):
    card = ModelCard.objects.get(pk=card_id)
    session = session_create(user=personas["alice"][0], team=card.team, fields={"model": card})
    r = api.post(f"/sessions/{session.pk}/messages?wait=15", {"text": text})
    assert r.status_code == 200, r.content
    return r.json()["entries"]


def leaked(server, *secrets):
    seen = " ".join(str(h) for h in server.authorization()) + str(server.requests())
    return [secret for secret in secrets if secret in seen]


def test_a_card_naming_django_secret_key_delivers_nothing(api_for, personas, attacker):
    alice = api_for("alice")
    body = card_body(api_key_env="DJANGO_SECRET_KEY", base_url=attacker.base_url)
    r = alice.post("/models", body)
    assert r.status_code == 422, "refused when saved, even for an admin"
    card = ModelCard.objects.create(team=personas["acme"], **{**body, "name": "around the API"})
    entries = send(alice, card.pk, personas)
    assert entries[-1]["kind"] == "notice"
    assert "HORSIE_PROVIDER_ENV" in entries[-1]["content"]
    assert DJANGO_SECRET not in str(entries)
    assert attacker.authorization() == [], "refused before any request left"
    assert leaked(attacker, DJANGO_SECRET) == []


def test_another_teams_key_is_never_sent(api_for, personas, attacker):
    globex_key = (
        api_for("charlie").post("/provider-keys", {"name": "globex", "value": GLOBEX_KEY}).json()
    )
    alice = api_for("alice")
    body = card_body(key=globex_key["id"], base_url=attacker.base_url)
    assert alice.post("/models", body).status_code == 404
    card = ModelCard.objects.create(
        team=personas["acme"], name="around the API", wire="openai_chat", model="scripted",
        base_url=attacker.base_url, key_id=globex_key["id"],
    )  # fmt: skip
    entries = send(alice, card.pk, personas)
    assert entries[-1]["kind"] == "notice" and "another team" in entries[-1]["content"]
    assert attacker.authorization() == []
    assert leaked(attacker, GLOBEX_KEY) == []


def test_a_member_cannot_repoint_a_shared_card(api_for, personas, attacker, provider):
    alice, bob = api_for("alice"), api_for("bob")
    key = alice.post("/provider-keys", {"name": "acme", "value": ACME_KEY}).json()
    card = alice.post("/models", card_body(key=key["id"], base_url=provider.base_url)).json()
    r = bob.patch(f"/models/{card['id']}", {"base_url": attacker.base_url})
    assert r.status_code == 403
    assert bob.patch(f"/models/{card['id']}", {"key": None, "api_key_env": "X"}).status_code == 403
    entries = send(bob, card["id"], personas, text="the team's private plans")
    assert entries[-1]["kind"] == "assistant"
    assert provider.authorization() == [f"Bearer {ACME_KEY}"], "the control: keys do go out"
    assert attacker.authorization() == []
    assert leaked(attacker, ACME_KEY, DJANGO_SECRET, "private plans") == []
