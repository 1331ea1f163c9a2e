"""A model card's `thinking_budget` (Anthropic extended thinking): the API and the Models
page keep it within Anthropic's rules (at least 1,024 tokens, below the output limit, on the
anthropic wire only), refuse anything else with nothing saved, and the wiring hands it to the
anthropic wire alone."""

from __future__ import annotations

import pytest

from horsie_site import wiring
from sessions_app.models import ModelCard

CLAUDE = {"name": "Claude", "wire": "anthropic", "model": "claude-sonnet-4-5",
          "max_output_tokens": 8192}  # fmt: skip


def test_the_api_stores_and_returns_a_budget(api_for, personas):
    api = api_for("alice")
    r = api.post("/models", {**CLAUDE, "thinking_budget": 4096, "base_url": "http://127.0.0.1:9"})
    assert r.status_code == 201, r.content
    assert r.json()["thinking_budget"] == 4096
    card = ModelCard.objects.get(pk=r.json()["id"])
    assert wiring.card_config(card).thinking_budget == 4096
    r = api.patch(f"/models/{card.pk}", {"thinking_budget": None})
    assert r.status_code == 200 and r.json()["thinking_budget"] is None
    assert api.post("/models", CLAUDE).json()["thinking_budget"] is None


@pytest.mark.parametrize(
    ("fields", "status", "words"),
    [
        ({"thinking_budget": 1000}, 422, "1024"),
        ({"thinking_budget": 8192}, 422, "below max_output_tokens (8192)"),
        ({"thinking_budget": 2048, "wire": "openai_chat"}, 422, "anthropic wire only"),
        ({"thinking_budget": "lots"}, 422, "thinking_budget"),
    ],
)
def test_the_api_refuses_a_budget_out_of_bounds_and_saves_nothing(
    api_for, personas, fields, status, words
):
    r = api_for("alice").post("/models", {**CLAUDE, **fields})
    assert r.status_code == status and words in r.content.decode(), r.content
    assert not ModelCard.objects.filter(name="Claude").exists()


def test_a_patch_may_not_leave_a_card_with_a_budget_it_cannot_use(api_for, personas):
    api = api_for("alice")
    card = api.post("/models", {**CLAUDE, "thinking_budget": 4096}).json()
    for change, words in (
        ({"max_output_tokens": 4096}, "below max_output_tokens (4096)"),
        ({"wire": "openai_responses"}, "anthropic wire only"),
    ):
        r = api.patch(f"/models/{card['id']}", change)
        assert r.status_code == 422 and words in r.content.decode(), r.content
    stored = ModelCard.objects.get(pk=card["id"])
    assert (stored.wire, stored.max_output_tokens, stored.thinking_budget) == (
        "anthropic", 8192, 4096,
    )  # fmt: skip
    r = api.patch(f"/models/{card['id']}", {"wire": "openai_chat", "thinking_budget": None})
    assert r.status_code == 200 and r.json()["thinking_budget"] is None


def test_the_models_page_sets_a_budget_with_the_same_rules(client, personas):
    client.force_login(personas["alice"][0])
    sent = {"name": "Claude", "wire": "anthropic", "model": "claude-sonnet-4-5", "base_url": "",
            "key": "", "context_window": "200000", "max_output_tokens": "8192",
            "price_input": "", "price_cached_input": "", "price_output": "",
            "reasoning_replay": "tool_turns"}  # fmt: skip
    refused = client.post("/models/new/", {**sent, "thinking_budget": "9000"})
    assert refused.status_code == 422 and "below max_output_tokens" in refused.content.decode()
    assert not ModelCard.objects.filter(name="Claude").exists()
    saved = client.post("/models/new/", {**sent, "thinking_budget": "2048"})
    card = ModelCard.objects.get(name="Claude")
    assert saved.status_code == 302 and card.thinking_budget == 2048
    page = client.get(f"/models/{card.pk}/").content.decode()
    assert 'name="thinking_budget"' in page and 'value="2048"' in page
    client.post(f"/models/{card.pk}/", {**sent, "thinking_budget": ""})
    card.refresh_from_db()
    assert card.thinking_budget is None
