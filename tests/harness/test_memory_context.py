"""Memory is context: every selected space is in every call, whatever compaction folds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from harness.compaction.policy import Policy
from harness.loop import run_turn
from harness.memory import MemoryNote, MemorySpace
from harness.messages import SystemMessage
from harness.runtime import Deps, TurnConfig
from harness.testing import Archivist, InMemorySource, MemoryStore, RecordingEvents
from harness.tools import builtin_tools

RULE = "Never deploy on a Friday; MARKER-RULE-1"
WHEN = datetime(2025, 1, 1, tzinfo=UTC)


def space(**overrides) -> MemorySpace:
    values = {
        "id": 1,
        "name": "conventions",
        "description": "How this team works",
        "mode": "write",
        "budget_tokens": 400,
        "notes": (MemoryNote(title="deploys", body=RULE, pinned=True, updated_at=WHEN),),
    }
    return MemorySpace(**{**values, **overrides})


def setup(source: InMemorySource):
    store = MemoryStore()
    config = TurnConfig(
        session_id=1,
        system_prompt="You are terse.",
        max_steps=3,
        max_output_tokens=100,
        model="archivist",
        policy=Policy(window=3_000, max_output_tokens=100, declared_window=3_000),
    )
    provider = Archivist()
    deps = Deps(
        store=store,
        events=RecordingEvents(),
        provider=provider,
        tools=builtin_tools(memory=True),
        memory=source,
    )
    return store, config, deps, provider


def system_text(request) -> str:
    first = request.messages[0]
    assert isinstance(first, SystemMessage)
    return first.text


async def test_a_rule_is_in_every_request_across_twenty_compactions():
    source = InMemorySource(spaces=[space()])
    store, config, deps, provider = setup(source)
    turn = 0
    while len([e for e in store.entries if e.kind == "boundary"]) < 20:
        turn += 1
        await store.append(1, kind="user", content=f"Turn {turn}: " + "filler words " * 60)
        await run_turn(config, deps)
        assert turn < 400, "20 compactions"
    assert len(provider.requests) > 40
    for request in provider.requests:  # turns and summary requests alike
        assert RULE in system_text(request)
    for boundary in (e for e in store.entries if e.kind == "boundary"):
        assert "MARKER-RULE-1" not in boundary.content, "memory is never folded"


async def test_a_teammate_s_edit_reaches_the_next_call():
    source = InMemorySource(spaces=[space()])
    store, config, deps, provider = setup(source)
    await store.append(1, kind="user", content="hello")
    await run_turn(config, deps)
    source.edit("conventions", "deploys", "Deploys only on Tuesdays.", pinned=True)
    await store.append(1, kind="user", content="and now?")
    await run_turn(config, deps)
    assert RULE in system_text(provider.requests[0])
    assert "Deploys only on Tuesdays." in system_text(provider.requests[-1])
    assert RULE not in system_text(provider.requests[-1])


async def test_what_the_budget_leaves_out_is_named_in_the_request():
    notes = tuple(
        MemoryNote(title=f"note {n}", body="detail " * 60, updated_at=WHEN + timedelta(minutes=n))
        for n in range(12)
    )
    source = InMemorySource(spaces=[space(notes=notes, budget_tokens=300)])
    store, config, deps, provider = setup(source)
    await store.append(1, kind="user", content="hello")
    await run_turn(config, deps)
    text = system_text(provider.requests[0])
    assert "memory truncated:" in text and "`conventions`" in text
    assert "note 0" in text.split("memory truncated:")[1], "the oldest are left out, by name"
