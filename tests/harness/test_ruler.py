"""One ruler: compaction decides in the provider's tokens, whatever its tokenizer.

`Archivist` counts prompts its own way (bytes × density / 4, plus role markers per message)
and refuses a request that does not fit its real window, as a server does. With tokenizers
at 1×, 3× and 0.5× Horsie's estimate, 300 turns of prose, CSV and code must never be
refused, compact only at the trigger, keep what the recent budget says, and leave a prompt
the provider counts within 10% of what the boundary planned.
"""

from __future__ import annotations

import pytest

from harness.compaction.policy import Policy
from harness.loop import run_turn
from harness.messages import ModelRequest, UserMessage
from harness.runtime import Deps, TurnConfig
from harness.testing import Archivist, MemoryStore, RecordingEvents, prompt_size
from harness.tools import builtin_tools

WINDOW = 8_000
CSV = "".join(
    f"2026-05-01,14:{m:02d}:05,station {m % 7},crate {4400 + m},400.0 kg,ok\n" for m in range(60)
)
CODE = (
    "def fold(entries, state=None):\n    current = state or SessionState()\n"
    "    for entry in entries:\n        current = step(current, entry)\n    return current\n"
) * 6
PROSE = "We agreed to keep the parser small and to measure before optimising anything. " * 8


def message(n: int) -> str:
    body = (PROSE, CSV, CODE)[n % 3]
    return f"Turn {n}: " + ("tool please " if n % 5 == 0 else "") + body


@pytest.mark.parametrize("density", [1.0, 3.0, 0.5])
async def test_three_hundred_turns_fit_and_compact_only_at_the_trigger(density):
    provider = Archivist(density=density, limit=WINDOW)
    policy = Policy(window=WINDOW, max_output_tokens=400, declared_window=WINDOW)
    store = MemoryStore()
    config = TurnConfig(
        session_id=1,
        system_prompt="You are terse.",
        max_steps=4,
        max_output_tokens=400,
        model="archivist",
        policy=policy,
    )
    deps = Deps(store=store, events=RecordingEvents(), provider=provider, tools=builtin_tools())
    for n in range(1, 301):
        await store.append(1, kind="user", content=message(n))
        await run_turn(config, deps)

    assert provider.refused == [], "every request fit the real window"
    notices = [e.data["code"] for e in store.entries if e.kind == "notice"]
    assert notices == [], notices
    boundaries = [e for e in store.entries if e.kind == "boundary"]
    assert boundaries, "300 turns compacted"
    assert all(b.data["tokens_before"] >= policy.trigger_tokens for b in boundaries)
    turns_per_compaction = 300 / len(boundaries)
    assert turns_per_compaction >= 3, f"{len(boundaries)} compactions in 300 turns"

    for boundary in boundaries:
        kept, entries = kept_size(store, boundary, density)
        if entries > 1:  # one input larger than the budget alone is kept: it awaits its answer
            assert kept <= policy.recent_budget * 1.1, (kept, policy.recent_budget)
        counted = next_prompt(store, boundary)
        planned = boundary.data["tokens_after"]
        assert abs(counted - planned) <= 0.1 * counted, (boundary.seq, counted, planned)


def kept_size(store: MemoryStore, boundary, density: float) -> tuple[int, int]:
    """What the cut kept verbatim, as the provider counts it, and how many entries."""
    cut = boundary.data["first_kept_seq"]
    kept = [
        e for e in store.entries if cut <= e.seq < boundary.seq and e.kind in ("user", "assistant")
    ]
    texts = tuple(UserMessage(text=e.content) for e in kept)
    return prompt_size(ModelRequest(messages=texts), density), len(kept)


def next_prompt(store: MemoryStore, boundary) -> int:
    """The prompt of the first model call after the boundary, as the provider reported it."""
    reply = next(e for e in store.entries if e.seq > boundary.seq and e.kind == "assistant")
    return int(reply.data["usage"]["input_tokens"])
