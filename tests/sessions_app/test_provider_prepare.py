"""A new session's card gets its provider and SDK client built on the turn loop ahead of its
first turn (in-process dispatch), so that turn does not build them."""

from __future__ import annotations

import pytest

from horsie_site import wiring
from sessions_app import services
from sessions_app.dispatcher import TurnThread

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_new_sessions_provider_and_client_are_ready_on_the_turn_loop(personas, card, settings):
    settings.HORSIE = {**settings.HORSIE, "DISPATCH": "inprocess", "OUTBOUND_ALLOW": ["127.0.0.1"]}
    card.base_url = "http://127.0.0.1:9/v1"  # never called: only its client is built
    card.save()
    wiring.cached_provider.cache_clear()
    alice, acme = personas["alice"][0], personas["acme"]
    session = services.session_create(user=alice, team=acme, fields={"model": card})

    async def built_here() -> tuple[bool, bool]:
        import asyncio

        others = asyncio.all_tasks() - {asyncio.current_task()}
        if others:  # what the session's commit submitted, still running
            await asyncio.wait(others, timeout=10)
        config = await asyncio.to_thread(wiring.card_config, session.model)
        info = wiring.cached_provider.cache_info()
        provider = wiring.cached_provider(config)
        hit = wiring.cached_provider.cache_info().hits == info.hits + 1
        return hit, asyncio.get_running_loop() in provider._clients  # type: ignore[attr-defined]

    hit, has_client = TurnThread.get().submit(built_here()).result(timeout=10)
    assert hit, "the provider was built before the first turn asked for it"
    assert has_client, "and its client for the turn loop"


def test_with_channels_dispatch_nothing_is_built_here(personas, card, settings):
    settings.HORSIE = {**settings.HORSIE, "DISPATCH": "channels"}
    wiring.cached_provider.cache_clear()
    services.session_create(
        user=personas["alice"][0], team=personas["acme"], fields={"model": card}
    )
    assert wiring.cached_provider.cache_info().currsize == 0
