"""`spawn_subagent`: the types in its description, an answer at once, durable running
subagents, and the depth, fan-out and unknown-type refusals."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from harness.compaction.policy import Policy
from harness.loop import run_turn
from harness.runtime import Deps, TurnConfig
from harness.state import fold
from harness.subagents import MAX_RUNNING, SubagentLimits, SubagentType
from harness.testing import MemoryStore, RecordingEvents, ScriptedProvider, reply
from harness.tools import builtin_tools

TYPES = [
    SubagentType(name="researcher", description="Reads widely and reports back briefly"),
    SubagentType(name="coder", description="Writes and runs code"),
]


@dataclass
class FakeLauncher:
    """Starts nothing: records what it was asked and names children 100, 101, …"""

    depths: dict[int, int] = field(default_factory=dict)
    launched: list[tuple[int, str, str]] = field(default_factory=list)

    async def depth(self, session_id: int) -> int:
        return self.depths.get(session_id, 0)

    async def launch(self, session_id: int, *, type_name: str, task: str) -> int:
        self.launched.append((session_id, type_name, task))
        return 100 + len(self.launched) - 1


def spawn(call_id: str, type_name: str, task: str) -> tuple[str, str, str]:
    return (call_id, "spawn_subagent", json.dumps({"type": type_name, "task": task}))


def setup(steps, launcher: FakeLauncher | None = None, limits: SubagentLimits | None = None):
    store = MemoryStore()
    config = TurnConfig(
        subagent_limits=limits or SubagentLimits(),
        session_id=1,
        system_prompt="You delegate.",
        max_steps=4,
        max_output_tokens=100,
        model="scripted",
        policy=Policy(window=6_000, max_output_tokens=100, auto=False),
    )
    launcher = launcher or FakeLauncher()
    deps = Deps(
        store=store,
        events=RecordingEvents(),
        provider=ScriptedProvider(steps, default=reply("ok")),
        tools=builtin_tools(subagents=TYPES),
        subagents=launcher,
    )
    return store, config, deps, launcher


def results(store: MemoryStore):
    return [e for e in store.entries if e.kind == "tool_result"]


def test_the_tool_lists_the_selected_types_and_is_offered_only_with_some():
    spec = builtin_tools(subagents=TYPES)["spawn_subagent"].spec
    assert "- researcher — Reads widely and reports back briefly" in spec.description
    assert "- coder — Writes and runs code" in spec.description
    assert spec.parameters["required"] == ["type", "task"]
    assert "spawn_subagent" not in builtin_tools()


async def test_a_spawn_is_answered_at_once_with_the_child_and_is_durable_until_its_result():
    store, config, deps, launcher = setup(
        [reply("", spawn("c1", "researcher", "Find the spec")), reply("Waiting for it.")]
    )
    await store.append(1, kind="user", content="delegate")
    assert await run_turn(config, deps) == "reply"
    (result,) = results(store)
    assert not result.data["is_error"]
    assert "session 100" in result.content and "Find the spec" not in result.content
    assert launcher.launched == [(1, "researcher", "Find the spec")]
    running = {"id": 100, "type": "researcher", "task": "Find the spec"}
    assert (await store.state(1)).subagents == (running,)

    await store.append(
        1,
        kind="subagent_result",
        content="The spec says X.",
        data={"subagent": 100, "type": "researcher"},
    )
    assert (await store.state(1)).subagents == ()
    assert fold(store.entries).subagents == ()


async def test_running_subagents_are_carried_across_a_compaction_verbatim():
    store, config, deps, _ = setup(
        [reply("", spawn("c1", "coder", "Port the parser")), reply("ok")]
    )
    await store.append(1, kind="user", content="delegate")
    await run_turn(config, deps)
    provider = deps.provider
    assert isinstance(provider, ScriptedProvider)
    for n in range(4):
        await store.append(1, kind="user", content=f"more work {n} " + "words " * 300)
        provider.steps = [reply("done " + "words " * 200)]
        await run_turn(config, deps)
    await store.append(1, kind="command", content="/compact", data={"name": "compact"})
    provider.steps = [reply("Summary: a coder is porting the parser.")]
    await run_turn(config, deps)
    boundary = next(e for e in store.entries if e.kind == "boundary")
    carried = {"id": 100, "type": "coder", "task": "Port the parser"}
    assert boundary.data["carried"]["subagents"] == [carried]
    assert (await store.state(1)).subagents == (carried,)
    await store.append(1, kind="user", content="carry on")
    provider.steps = [reply("after")]
    await run_turn(config, deps)
    texts = [getattr(m, "text", "") for m in provider.requests[-1].messages]
    assert any("Running subagents:" in t and '"task": "Port the parser"' in t for t in texts)


async def test_an_unknown_type_is_refused_with_the_types_listed():
    store, config, deps, launcher = setup([reply("", spawn("c1", "painter", "Paint")), reply("ok")])
    await store.append(1, kind="user", content="delegate")
    await run_turn(config, deps)
    (result,) = results(store)
    assert result.data["is_error"]
    assert "'painter'" in result.content and "researcher, coder" in result.content
    assert launcher.launched == [] and (await store.state(1)).subagents == ()


async def test_a_grandchild_may_not_spawn_but_a_child_may():
    child = FakeLauncher(depths={1: 1})
    store, config, deps, _ = setup([reply("", spawn("c1", "coder", "t")), reply("ok")], child)
    await store.append(1, kind="user", content="delegate")
    await run_turn(config, deps)
    assert not results(store)[0].data["is_error"]

    grandchild = FakeLauncher(depths={1: 2})
    store, config, deps, _ = setup([reply("", spawn("c1", "coder", "t")), reply("ok")], grandchild)
    await store.append(1, kind="user", content="delegate")
    await run_turn(config, deps)
    (result,) = results(store)
    assert result.data["is_error"] and "may not spawn" in result.content
    assert grandchild.launched == []


async def test_fan_out_beyond_the_limit_is_refused_in_the_same_reply():
    calls = [spawn(f"c{i}", "coder", f"part {i}") for i in range(MAX_RUNNING + 1)]
    store, config, deps, launcher = setup([reply("", *calls), reply("ok")])
    await store.append(1, kind="user", content="split it")
    await run_turn(config, deps)
    outcomes = [r.data["is_error"] for r in results(store)]
    assert outcomes == [False] * MAX_RUNNING + [True]
    assert "already running" in results(store)[-1].content
    assert len(launcher.launched) == MAX_RUNNING
    assert len((await store.state(1)).subagents) == MAX_RUNNING


async def test_the_limits_come_from_the_turn_config():
    child = FakeLauncher(depths={1: 1})
    steps = [reply("", spawn("c1", "coder", "t")), reply("I did it myself.")]
    store, config, deps, _ = setup(steps, child, SubagentLimits(max_depth=1))
    await store.append(1, kind="user", content="delegate")
    assert await run_turn(config, deps) == "reply"
    refusal, answer = results(store)[0], store.entries[-1]
    assert refusal.data["is_error"] and "at most 1 deep" in refusal.content
    assert "do the task yourself" in refusal.content
    assert child.launched == [] and answer.content == "I did it myself."

    store, config, deps, launcher = setup(
        [reply("", *[spawn(f"c{i}", "coder", f"p{i}") for i in range(3)]), reply("ok")],
        limits=SubagentLimits(max_running=2),
    )
    await store.append(1, kind="user", content="split it")
    await run_turn(config, deps)
    assert [r.data["is_error"] for r in results(store)] == [False, False, True]
    assert "at most 2" in results(store)[-1].content and len(launcher.launched) == 2
