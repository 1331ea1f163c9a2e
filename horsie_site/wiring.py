"""The one place that builds the core from Django settings and stored rows.

Model cards become `CardConfig`s, providers are built per turn, and a session's tools and
turn configuration are put together here. Tests swap `provider_for` to script the model.

Building a card's config is the last gate before a secret leaves the server, so the rules
checked when the card was saved are checked again here (`outbound`): the destination after
DNS resolution, the provider key's team, the environment variable's allow-list. A card that
breaks one fails its turn with a notice; nothing is sent.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from django.conf import settings

from harness.compaction.policy import Policy
from harness.providers import build_provider
from harness.providers.base import Capabilities, CardConfig, Provider, ProviderError, RetryPolicy
from harness.runtime import TurnConfig
from harness.subagents import SubagentLimits, SubagentType
from harness.tokens import ESTIMATE, TokenCounter
from harness.tools import builtin_tools
from harness.tools.base import Tool
from horsie_site import outbound
from horsie_site.inputs import finite_or_none
from skills_app.selectors import subagent_types_selected
from teams_app import vault

# Where a wire's SDK goes when the card names no base URL: checked like any other.
DEFAULT_URLS = {
    "openai_chat": "https://api.openai.com/v1",
    "openai_responses": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}

UNKNOWN_WIRE = Capabilities(tools=True, streaming_usage=False)


def card_config(card: Any) -> CardConfig:
    if card.wire in DEFAULT_URLS:
        outbound.check_call(card.base_url or DEFAULT_URLS[card.wire])
    return CardConfig(
        wire=card.wire,
        model=card.model,
        base_url=card.base_url or None,
        api_key=card_api_key(card),
        context_window=card.context_window,
        max_output_tokens=card.max_output_tokens,
        reasoning_replay=card.reasoning_replay,
        thinking_budget=card.thinking_budget if card.wire == "anthropic" else None,
    )


def card_api_key(card: Any) -> str | None:
    """The card's own team's provider key, else an allowed environment variable, else none."""
    if card.key_id is not None:
        if card.key.team_id != card.team_id:
            raise outbound.OutboundRefused("The card's provider key belongs to another team.")
        return vault.decrypt(card.key.ciphertext)
    if card.api_key_env:
        outbound.check_env(card.api_key_env, card.team.name)
        return os.environ.get(card.api_key_env)
    return None


def provider_options() -> dict[str, Any]:
    horsie = settings.HORSIE
    return {
        "model_path": horsie["LOCAL_MODEL_PATH"] or None,
        "n_threads": horsie["LOCAL_THREADS"],
        "timeout": horsie["PROVIDER_TIMEOUT"],
        "retry": RetryPolicy(),
        "connect_check": outbound.check_connect,
        "count_tokens": horsie["COUNT_TOKENS"],
    }


def provider_for(card: Any) -> Provider:
    return cached_provider(card_config(card))


@functools.lru_cache(maxsize=64)
def cached_provider(config: CardConfig) -> Provider:
    """Providers hold HTTP clients (and the local model): build one per card configuration."""
    return build_provider(config, provider_options())


def ruler_for(card: Any) -> tuple[Capabilities, TokenCounter]:
    """What the card's wire can carry and how it counts. Counting calls nobody, so this
    needs neither the key nor the outbound checks; a wire not available yet is counted by
    the estimate, so a page about its sessions still shows their context."""
    config = CardConfig(
        wire=card.wire,
        model=card.model,
        base_url=card.base_url or None,
        context_window=card.context_window,
        max_output_tokens=card.max_output_tokens,
        reasoning_replay=card.reasoning_replay,
    )
    try:
        provider = cached_provider(config)
    except ProviderError:
        return UNKNOWN_WIRE, ESTIMATE
    return provider.capabilities, provider.counter


def tools_for(session: Any) -> dict[str, Tool]:
    """The built-in tools a session offers; `memory` when it selected a memory space,
    `load_skill` when it selected skills (or bundles of them), `spawn_subagent` when it
    selected subagent types. A subagent gets no `ask_user` (nobody watches it to answer)
    and, when its type names tools, only those."""
    tools = builtin_tools(
        memory=bool(session.memory),
        skills=bool(session.skills or session.bundles),
        subagents=subagent_types_now(session) if session.subagent_types else (),
    )
    if session.kind != "subagent":
        return tools
    allowed = set(session.tools or tools) - {"ask_user"}
    return {name: tool for name, tool in tools.items() if name in allowed}


def subagent_types_now(session: Any) -> list[SubagentType]:
    return [
        SubagentType(name=t.name, description=t.description)
        for t in subagent_types_selected(session)
    ]


def turn_config(session: Any) -> TurnConfig:
    return TurnConfig(
        session_id=session.pk,
        system_prompt=session.system_prompt,
        max_steps=session.max_steps,
        max_output_tokens=session.model.max_output_tokens,
        model=session.model.model,
        policy=policy_for(session),
        subagent_limits=SubagentLimits(
            max_depth=settings.HORSIE["SUBAGENT_MAX_DEPTH"],
            max_running=settings.HORSIE["SUBAGENT_MAX_RUNNING"],
        ),
    )


def policy_for(session: Any) -> Policy:
    """When and how a session compacts: its card's window, the server's settings, and the
    session's own choices (which can only move compaction earlier)."""
    horsie = settings.HORSIE
    return Policy(
        window=session.model.context_window,
        declared_window=session.model.context_window,
        max_output_tokens=session.model.max_output_tokens,
        auto=session.auto_compact,
        trigger=float(horsie["COMPACT_TRIGGER"]),
        compact_at=finite_or_none(session.compact_at),
        recent_fraction=float(horsie["RECENT_FRACTION"]),
        summary_fraction=float(horsie["SUMMARY_FRACTION"]),
        clear_tool_results=session.clear_tool_results,
    )
