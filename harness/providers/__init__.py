"""One module per wire, each exposing `WIRE` and `build(card, options) -> Provider`.

`build_provider` picks the module by the card's wire; a wire is imported only when a card
uses it, so an SDK that is not installed costs nothing until it is needed.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from harness.providers.base import CardConfig, Provider, ProviderError

_MODULES = {
    "openai_chat": "harness.providers.openai_chat",
    "openai_responses": "harness.providers.openai_responses",
    "anthropic": "harness.providers.anthropic",
    "local": "harness.providers.local",
}


def build_provider(card: CardConfig, options: Mapping[str, Any] | None = None) -> Provider:
    module_name = _MODULES.get(card.wire)
    if module_name is None:
        raise ProviderError(f"the {card.wire} wire is not available yet", code="unsupported")
    module = importlib.import_module(module_name)
    provider: Provider = module.build(card, dict(options or {}))
    return provider
