"""The state fold and its serialised contract, over the turn loop's real entries."""

from __future__ import annotations

import json
from pathlib import Path

from harness.loop import run_turn
from harness.runtime import Deps, TurnConfig
from harness.state import deserialise, fold, serialise
from harness.testing import MemoryStore, RecordingEvents, ScriptedProvider, reply
from harness.tools.todo_write import TodoWrite

FIXTURES = Path(__file__).parent / "fixtures"


async def run(*steps):
    store = MemoryStore()
    deps = Deps(
        store=store,
        events=RecordingEvents(),
        provider=ScriptedProvider(steps),
        tools={"todo_write": TodoWrite()},
    )
    config = TurnConfig(
        session_id=1, system_prompt="", max_steps=5, max_output_tokens=None, model="m"
    )
    await store.append(1, kind="user", content="plan it")
    await run_turn(config, deps)
    return store.entries


async def test_todo_write_folds_into_the_task_list():
    tasks = [
        {"text": "Read the spec", "status": "done"},
        {"text": "Write the fold", "status": "in_progress"},
    ]
    entries = await run(
        reply("", ("c1", "todo_write", json.dumps({"tasks": tasks}))), reply("Planned.")
    )
    state = fold(entries)
    assert [(t.text, t.status) for t in state.tasks] == [
        ("Read the spec", "done"),
        ("Write the fold", "in_progress"),
    ]
    assert state.seq == entries[-1].seq
    assert state.open_calls == {}


async def test_a_refused_todo_write_changes_nothing():
    bad = {"tasks": [{"text": "x", "status": "someday"}]}
    entries = await run(reply("", ("c1", "todo_write", json.dumps(bad))), reply("ok"))
    assert entries[2].data["is_error"] is True
    assert "status must be one of" in entries[2].content
    assert fold(entries).tasks == ()


async def test_folding_in_two_parts_equals_folding_at_once():
    tasks = [{"text": "One", "status": "pending"}]
    entries = await run(
        reply("", ("c1", "todo_write", json.dumps({"tasks": tasks}))), reply("done")
    )
    middle = fold(entries[:2])
    assert deserialise(serialise(fold(entries[2:], deserialise(serialise(middle))))) == fold(
        entries
    )


def test_every_stored_version_loads():
    stored = sorted(FIXTURES.glob("state-v*.json"))
    assert stored, "a fixture of every state version ever written"
    for path in stored:
        state = deserialise(json.loads(path.read_text()))
        assert [t.text for t in state.tasks] == ["Ship the journal"]
