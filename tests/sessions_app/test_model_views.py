"""The Models page: list, create, edit, delete and test model cards in the browser, with
the API's rules (schema bounds, admin-only endpoint fields, another team's card is 404)."""

from __future__ import annotations

import pytest

from sessions_app.models import ModelCard

SECRET = "sk-acme-secret-value-7890"


@pytest.fixture
def key(personas):
    from teams_app.services import provider_key_create

    return provider_key_create(
        team=personas["acme"], user=personas["alice"][0], name="openai", value=SECRET
    )


def browser(client, personas, name):
    client.force_login(personas[name][0])
    return client


def form(**fields):
    base = {
        "name": "GPT",
        "wire": "openai_chat",
        "model": "gpt-4.1-mini",
        "base_url": "",
        "key": "",
        "context_window": "128000",
        "max_output_tokens": "2048",
        "price_input": "",
        "price_cached_input": "",
        "price_output": "",
        "reasoning_replay": "never",
    }
    return {**base, **fields}


def member_form(**fields):
    """What a member's browser sends: the endpoint is shown read-only, so not sent."""
    sent = form(**fields)
    sent.pop("base_url")
    sent.pop("key")
    return sent


def test_the_list_shows_the_teams_cards_and_labels_the_bundled_one(client, personas, card):
    ModelCard.objects.create(team=personas["acme"], name="Bundled", wire="local", model="smollm")
    ModelCard.objects.create(team=personas["globex"], name="Globex card", wire="local", model="m")
    page = browser(client, personas, "bob").get("/models/").content.decode()
    assert "Test card" in page and "Bundled" in page
    assert "135M demo model: it answers, it cannot summarise well" in page
    assert "Globex card" not in page
    assert 'href="/models/"' in page  # the sidebar link


def test_an_admin_adds_a_card_with_endpoint_key_and_prices(client, personas, key):
    response = browser(client, personas, "alice").post(
        "/models/new/",
        form(
            base_url="http://127.0.0.1:9/v1",
            key=str(key.pk),
            price_input="2",
            price_cached_input="0.5",
            price_output="8",
            reasoning_replay="tool_turns",
        ),
    )
    card = ModelCard.objects.get(name="GPT")
    assert response.status_code == 302 and response["Location"] == f"/models/{card.pk}/"
    assert card.base_url == "http://127.0.0.1:9/v1" and card.key_id == key.pk
    assert card.prices == {"input": 2.0, "cached_input": 0.5, "output": 8.0}
    assert card.reasoning_replay == "tool_turns" and card.context_window == 128000
    assert card.endpoint_changed_by == personas["alice"][0]
    page = client.get(f"/models/{card.pk}/").content.decode()
    assert "openai (…7890)" in page  # the key by name and last four
    assert SECRET not in page


def test_the_api_schema_bounds_hold_on_the_form(client, personas):
    alice = browser(client, personas, "alice")
    response = alice.post("/models/new/", form(context_window="100"))
    assert response.status_code == 400 and "256" in response.content.decode()
    response = alice.post("/models/new/", form(price_input="1"))
    assert response.status_code == 400
    assert "all three prices" in response.content.decode()
    response = alice.post("/models/new/", form(base_url="ftp://example.com/v1"))
    assert response.status_code == 422 and "http" in response.content.decode()
    response = alice.post("/models/new/", form(base_url="http://169.254.169.254/v1"))
    assert response.status_code == 422 and "metadata" in response.content.decode()
    assert not ModelCard.objects.filter(name="GPT").exists()


def test_a_member_edits_a_card_but_not_its_endpoint(client, personas, card, key):
    card.base_url = "http://127.0.0.1:9/v1"
    card.key = key
    card.save()
    bob = browser(client, personas, "bob")
    page = bob.get(f"/models/{card.pk}/").content.decode()
    assert 'name="base_url"' not in page and "http://127.0.0.1:9/v1" in page  # read-only
    response = bob.post(f"/models/{card.pk}/", member_form(name="Renamed", model="scripted"))
    assert response.status_code == 302
    card.refresh_from_db()
    assert card.name == "Renamed" and card.key_id == key.pk
    assert card.base_url == "http://127.0.0.1:9/v1"
    for endpoint in ({"base_url": "http://127.0.0.1:8/v1"}, {"key": ""}):
        response = bob.post(f"/models/{card.pk}/", {**member_form(model="scripted"), **endpoint})
        assert response.status_code == 403
        assert "admin" in response.content.decode()
    card.refresh_from_db()
    assert card.base_url == "http://127.0.0.1:9/v1" and card.key_id == key.pk


def test_a_member_adds_a_card_without_an_endpoint_but_not_with_one(client, personas, key):
    bob = browser(client, personas, "bob")
    assert bob.post("/models/new/", member_form()).status_code == 302
    local = member_form(name="Local", wire="local", model="smollm2-135m-instruct")
    assert bob.post("/models/new/", local).status_code == 302
    assert ModelCard.objects.get(name="Local").base_url is None
    response = bob.post("/models/new/", form(name="With key", key=str(key.pk)))
    assert response.status_code == 403
    assert not ModelCard.objects.filter(name="With key").exists()


def test_another_teams_card_is_404_everywhere(client, personas, card):
    charlie = browser(client, personas, "charlie")
    assert charlie.get(f"/models/{card.pk}/").status_code == 404
    assert charlie.post(f"/models/{card.pk}/", form()).status_code == 404
    assert charlie.post(f"/models/{card.pk}/test/").status_code == 404
    assert charlie.post(f"/models/{card.pk}/delete/").status_code == 404
    assert ModelCard.objects.filter(pk=card.pk, name="Test card").exists()


def test_delete_keeps_a_card_in_use(client, personas, card, session):
    alice = browser(client, personas, "alice")
    spare = ModelCard.objects.create(team=personas["acme"], name="Spare", wire="local", model="m")
    assert alice.post(f"/models/{card.pk}/delete/").status_code == 302
    assert ModelCard.objects.filter(pk=card.pk).exists()
    response = alice.post(f"/models/{spare.pk}/delete/", headers={"HX-Request": "true"})
    assert response["HX-Redirect"] == "/models/"
    assert not ModelCard.objects.filter(pk=spare.pk).exists()


def test_test_connection_shows_the_answer_and_latency(client, personas, card, scripted):
    from harness.testing import reply

    scripted.steps.append(reply("Ready."))
    response = browser(client, personas, "bob").post(
        f"/models/{card.pk}/test/", headers={"HX-Request": "true"}
    )
    text = response.content.decode()
    assert response.status_code == 200 and "Ready." in text and " ms" in text
    (request,) = scripted.requests
    assert request.max_output_tokens == 8 and len(request.messages) == 1


def test_test_connection_shows_the_providers_message(client, personas, card, scripted):
    from harness.providers.base import ProviderError

    scripted.steps.append(ProviderError("Incorrect API key provided: sk-…", code="auth"))
    text = browser(client, personas, "alice").post(f"/models/{card.pk}/test/").content.decode()
    assert "Failed" in text and "Incorrect API key provided" in text


def test_test_connection_refuses_a_forbidden_destination(client, personas, card):
    ModelCard.objects.filter(pk=card.pk).update(base_url="http://169.254.169.254/v1")
    text = browser(client, personas, "alice").post(f"/models/{card.pk}/test/").content.decode()
    assert "Failed" in text and "metadata" in text


def test_the_server_window_is_read_from_its_model_list():
    from sessions_app.probe import stated_window

    assert stated_window({"id": "m", "max_model_len": 32768}) == 32768
    assert stated_window({"id": "m", "meta": {"n_ctx_train": 8192}}) == 8192
    assert stated_window({"id": "m", "context_length": True}) is None
    assert stated_window({"id": "m"}) is None


def test_the_new_session_form_recommends_a_real_model(client, personas):
    alice = browser(client, personas, "alice")
    page = alice.get("/sessions/new/").content.decode()
    assert "add a real model on the Models page" in page and "135M demo model" in page
    response = alice.post("/sessions/new/", {"title": "First", "model": ""})
    assert response.status_code == 302  # on the bundled card, made for the team
    bundled = ModelCard.objects.get(team=personas["acme"], wire="local")
    page = alice.get("/sessions/new/").content.decode()
    assert "add a real model on the Models page" in page
    assert f"{bundled.name} — {bundled.note}" in page
    ModelCard.objects.create(team=personas["acme"], name="Real", wire="openai_chat", model="m")
    assert "add a real model" not in alice.get("/sessions/new/").content.decode()
