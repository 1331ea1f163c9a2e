"""Test connection: one tiny call through the card, exactly as a turn would make it.

The call goes through `wiring.provider_for` (so every outbound rule and the card's key apply)
and `harness.providers.base.complete`, with a one-word prompt, at most `PROBE_OUTPUT` output
tokens and a short deadline. What the server says about itself comes from its model list
(`GET {base_url}/models` on OpenAI-compatible wires), through the same guarded HTTP client
the wires use: the model ids it serves and, where it states one (vLLM's `max_model_len`,
llama.cpp's `n_ctx_train`, others' `context_length`), the window. A server without that list
simply reports nothing more. Failures come back as the provider's own message.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import async_to_sync

from harness.messages import ModelRequest, UserMessage
from harness.providers.base import ProviderError, complete
from harness.providers.guard import checked_client
from horsie_site import outbound, wiring
from sessions_app.models import ModelCard

PROBE_PROMPT = "Reply with one word: ready?"
PROBE_OUTPUT = 8
PROBE_SECONDS = 20.0
LIST_SECONDS = 5.0
LISTED_WIRES = ("openai_chat", "openai_responses")
WINDOW_KEYS = ("max_model_len", "context_length", "context_window", "max_context_length")
META_WINDOW_KEYS = ("n_ctx_train", "n_ctx")
SHOWN_IDS = 10


@dataclass(kw_only=True)
class ProbeResult:
    ok: bool
    answer: str = ""
    error: str = ""
    latency_ms: int | None = None
    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    server_models: list[str] = field(default_factory=list)
    served: bool | None = None  # whether the server lists the card's model id
    server_window: int | None = None


def card_probe(card: ModelCard) -> ProbeResult:
    """Make the call and ask the server about itself; never raises for a provider's fault."""
    try:
        provider = wiring.provider_for(card)
        api_key = wiring.card_api_key(card)
    except (outbound.OutboundRefused, ProviderError) as error:
        return ProbeResult(ok=False, error=str(error))
    base_url = card.base_url or wiring.DEFAULT_URLS.get(card.wire)
    return async_to_sync(probe)(provider, card.wire, card.model, base_url, api_key)


async def probe(
    provider: Any, wire: str, model: str, base_url: str | None, api_key: str | None
) -> ProbeResult:
    request = ModelRequest(
        messages=(UserMessage(text=PROBE_PROMPT),), max_output_tokens=PROBE_OUTPUT
    )
    started = time.monotonic()
    try:
        response = await asyncio.wait_for(complete(provider, request), PROBE_SECONDS)
    except TimeoutError:
        return ProbeResult(ok=False, error=f"No answer within {PROBE_SECONDS:.0f} seconds.")
    except ProviderError as error:
        return ProbeResult(ok=False, error=f"{error} ({error.code})")
    result = ProbeResult(
        ok=True,
        answer=response.text.strip() or "(an empty reply)",
        latency_ms=round((time.monotonic() - started) * 1000),
        usage=response.usage.as_dict() if response.usage else None,
        finish_reason=response.finish_reason,
    )
    if wire in LISTED_WIRES and base_url:
        await server_facts(result, model, base_url, api_key)
    return result


async def server_facts(result: ProbeResult, model: str, base_url: str, api_key: str | None) -> None:
    """The model ids the server lists and the window it states for the card's model, if any."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with checked_client(outbound.check_connect, LIST_SECONDS) as client:
            response = await client.get(f"{base_url.rstrip('/')}/models", headers=headers)
            listed = response.json() if response.status_code == 200 else None
    except Exception:  # the list is a bonus: whatever fails, no facts
        return
    items = [item for item in (listed or {}).get("data") or [] if isinstance(item, dict)]
    ids = [str(item.get("id")) for item in items if item.get("id")]
    result.server_models = ids[:SHOWN_IDS]
    result.served = model in ids if ids else None
    mine = next((item for item in items if item.get("id") == model), None)
    result.server_window = stated_window(mine or (items[0] if len(items) == 1 else {}))


def stated_window(item: dict[str, Any]) -> int | None:
    meta = item.get("meta") if isinstance(item.get("meta"), dict) else {}
    for source, keys in ((item, WINDOW_KEYS), (meta, META_WINDOW_KEYS)):
        for key in keys:
            value = source.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None
