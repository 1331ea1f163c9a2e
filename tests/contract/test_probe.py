"""Test connection against a real OpenAI-compatible server process: the one tiny call the
card makes (its body, its key), what the server lists about itself, and its error message."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .conftest import ScriptedServer

pytestmark = [pytest.mark.contract, pytest.mark.django_db(transaction=True)]

Start = Callable[[Any], ScriptedServer]
SECRET = "sk-probe-secret-0000-4242"


@pytest.fixture(autouse=True)
def real_wiring() -> Iterator[None]:
    from horsie_site import wiring

    wiring.cached_provider.cache_clear()
    yield
    wiring.cached_provider.cache_clear()


def card_on(server: ScriptedServer, personas: Any, model: str = "scripted") -> Any:
    from sessions_app.models import ModelCard
    from teams_app.services import provider_key_create

    key = provider_key_create(
        team=personas["acme"], user=personas["alice"][0], name="probe", value=SECRET
    )
    return ModelCard.objects.create(
        team=personas["acme"], name="Probe", wire="openai_chat", model=model,
        base_url=server.base_url, key=key, max_output_tokens=512,
    )  # fmt: skip


def test_one_tiny_call_with_the_cards_key(scripted_server: Start, personas: Any) -> None:
    from sessions_app.probe import card_probe

    server = scripted_server([{"text": "Ready"}])
    result = card_probe(card_on(server, personas))
    assert result.ok and result.answer == "Ready" and result.latency_ms is not None
    assert result.server_models == ["scripted"] and result.served is True
    (body,) = server.requests()
    assert body["max_tokens"] == 8 and len(body["messages"]) == 1
    assert server.authorization() == [f"Bearer {SECRET}"]


def test_the_server_not_listing_the_model_is_said(scripted_server: Start, personas: Any) -> None:
    from sessions_app.probe import card_probe

    server = scripted_server([{"text": "Ready"}])
    result = card_probe(card_on(server, personas, model="gpt-unknown"))
    assert result.ok and result.served is False


def test_a_refusal_shows_the_providers_message(scripted_server: Start, personas: Any) -> None:
    from sessions_app.probe import card_probe

    server = scripted_server([{"status": 401, "message": "Incorrect API key provided: sk-pro***"}])
    result = card_probe(card_on(server, personas))
    assert not result.ok and "Incorrect API key provided" in result.error
