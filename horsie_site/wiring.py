"""The one place that builds the core from Django settings and stored rows.

Model cards become `CardConfig`s (the API key is read from the environment variable the
card names, never stored), providers are built per turn, and a session's tools and turn
configuration are put together here. Tests swap `provider_for` to script the model.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from django.conf import settings

from harness.compaction import Policy
from harness.loop import TurnConfig
from harness.providers import build_provider
from harness.providers.base import CardConfig, Provider, RetryPolicy
from harness.tools import builtin_tools
from harness.tools.base import Tool
from horsie_site.inputs import finite_or_none


def card_config(card: Any) -> CardConfig:
    return CardConfig(
        wire=card.wire,
        model=card.model,
        base_url=card.base_url or None,
        api_key=os.environ.get(card.api_key_env) if card.api_key_env else None,
        context_window=card.context_window,
        max_output_tokens=card.max_output_tokens,
    )


def provider_options() -> dict[str, Any]:
    horsie = settings.HORSIE
    return {
        "model_path": horsie["LOCAL_MODEL_PATH"] or None,
        "n_threads": horsie["LOCAL_THREADS"],
        "timeout": horsie["PROVIDER_TIMEOUT"],
        "retry": RetryPolicy(),
    }


def provider_for(card: Any) -> Provider:
    return cached_provider(card_config(card))


@functools.lru_cache(maxsize=64)
def cached_provider(config: CardConfig) -> Provider:
    """Providers hold HTTP clients (and the local model): build one per card configuration."""
    return build_provider(config, provider_options())


def tools_for(session: Any) -> dict[str, Tool]:
    """The built-in tools a session offers."""
    return builtin_tools()


def turn_config(session: Any) -> TurnConfig:
    return TurnConfig(
        session_id=session.pk,
        system_prompt=session.system_prompt,
        max_steps=session.max_steps,
        max_output_tokens=session.model.max_output_tokens,
        model=session.model.model,
        policy=policy_for(session),
    )


def policy_for(session: Any) -> Policy:
    """When and how a session compacts: its card's window, the server's settings, and the
    session's own choices (which can only move compaction earlier)."""
    horsie = settings.HORSIE
    return Policy(
        window=session.model.context_window,
        max_output_tokens=session.model.max_output_tokens,
        auto=session.auto_compact,
        trigger=float(horsie["COMPACT_TRIGGER"]),
        compact_at=finite_or_none(session.compact_at),
        recent_fraction=float(horsie["RECENT_FRACTION"]),
        summary_fraction=float(horsie["SUMMARY_FRACTION"]),
        clear_tool_results=session.clear_tool_results,
    )
