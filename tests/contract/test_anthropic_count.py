"""The anthropic wire's count endpoint decides compaction near the trigger.

A turn loop in the core (`run_turn`, `MemoryStore`) on the real anthropic wire against the
scripted Messages server, which counts by its own rule (bytes, not characters, at a density
of 1.3) in its usage and its count endpoint alike. Four ASCII turns calibrate the estimate;
then a paste in Cyrillic (six bytes a character as the request's JSON escapes it) costs the
server several times what the calibrated estimate says. What is asserted is what the server counted: the compaction comes at
the first call whose count reaches the trigger, and not at all with counting off, where the
estimate decides.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from harness.compaction.policy import Policy
from harness.loop import run_turn
from harness.providers.anthropic import build
from harness.providers.base import CardConfig, RetryPolicy
from harness.runtime import Deps, TurnConfig
from harness.testing import MemoryStore, RecordingEvents
from harness.tools import builtin_tools

from .conftest import ScriptedServer

pytestmark = pytest.mark.contract

Start = Callable[[Any], ScriptedServer]
WINDOW = 6_000
MAX_OUTPUT = 200
TRIGGER = 4_800  # 0.8 of the window; the headroom rule (6,000 - 200 - 600) allows more
ASCII = "The morning shift moved the crates to the east dock and checked the scales. " * 14
CYRILLIC = "Утренняя смена перенесла ящики на восточный причал и проверила весы. " * 26


def counts(server: ScriptedServer) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/__counts") as response:
        served: list[dict[str, Any]] = json.load(response)
    return served


def session(server: ScriptedServer, *, count: bool, model: str = "claude-scripted"):
    card = CardConfig(
        wire="anthropic", model=model, base_url=server.base_url, api_key="sk-test",
        context_window=WINDOW, max_output_tokens=MAX_OUTPUT,
    )  # fmt: skip
    options = {"timeout": 10.0, "retry": RetryPolicy(attempts=1), "count_tokens": count}
    provider = build(card, options)
    store = MemoryStore()
    config = TurnConfig(
        session_id=1, system_prompt="You keep the dock's log.", max_steps=3,
        max_output_tokens=MAX_OUTPUT, model=model,
        policy=Policy(window=WINDOW, max_output_tokens=MAX_OUTPUT),
    )  # fmt: skip
    deps = Deps(store=store, events=RecordingEvents(), provider=provider, tools=builtin_tools())
    assert config.policy is not None and config.policy.trigger_tokens == TRIGGER
    return store, config, deps


async def turns(store: MemoryStore, config: TurnConfig, deps: Deps, server: ScriptedServer):
    """Per turn: the counts the server gave during it, and whether it compacted."""
    seen: list[tuple[list[int], bool]] = []
    for n, text in enumerate([ASCII] * 4 + [CYRILLIC]):
        before_counts, before_entries = len(counts(server)), len(store.entries)
        await store.append(1, kind="user", content=f"Entry {n}: {text}")
        assert await run_turn(config, deps) == "reply"
        served = [c["input_tokens"] for c in counts(server)[before_counts:]]
        compacted = any(e.kind == "boundary" for e in store.entries[before_entries:])
        seen.append((served, compacted))
    return seen


REPLY = {"text": "Logged.", "repeat": True}


async def test_compaction_comes_at_the_first_call_the_server_counts_over_the_trigger(
    anthropic_server: Start,
) -> None:
    server = anthropic_server({"density": 1.3, "steps": [REPLY]})
    seen = await turns(*session(server, count=True), server)

    first = next(i for i, (served, _) in enumerate(seen) if served and served[0] >= TRIGGER)
    assert first == 4, f"the Cyrillic paste crosses the trigger by the server's count: {seen}"
    for served, compacted in seen[:first]:
        assert not compacted and all(tokens < TRIGGER for tokens in served)
    assert seen[first][1], "it compacts before the call the server counted over the trigger"
    assert seen[0][0], "the first call, before any usage calibrated the estimate, is counted"


async def test_with_counting_off_the_calibrated_estimate_decides_and_misses_it(
    anthropic_server: Start,
) -> None:
    server = anthropic_server({"density": 1.3, "steps": [REPLY]})
    store, config, deps = session(server, count=False)
    seen = await turns(store, config, deps, server)
    assert [compacted for _, compacted in seen] == [False] * 5
    assert counts(server) == []
    last = [e for e in store.entries if e.kind == "assistant"][-1]
    assert last.data["usage"]["input_tokens"] >= TRIGGER, "the server did count it over"
    assert last.data["prompt_tokens_counted"] < TRIGGER, "the estimate said it was under"


async def test_a_count_that_fails_leaves_the_estimate_to_decide(anthropic_server: Start) -> None:
    server = anthropic_server({"density": 1.3, "steps": [REPLY]})
    store, config, deps = session(server, count=True, model="nocount-scripted")
    seen = await turns(store, config, deps, server)
    assert [compacted for _, compacted in seen] == [False] * 5
    assert [e.kind for e in store.entries].count("assistant") == 5, "every turn answered"
