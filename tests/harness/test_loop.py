"""The turn loop over the in-memory store: what is appended, what the model is sent."""

from __future__ import annotations

import json

import pytest

from harness.context import MISSING_RESULT, assemble
from harness.loop import drive, run_turn
from harness.messages import LogEntry, ToolResultMessage, ToolSpec
from harness.providers.base import ProviderError
from harness.runtime import Deps, TurnConfig
from harness.testing import MemoryStore, RecordingEvents, ScriptedProvider, reply
from harness.tools.base import ToolContext, ToolOutcome


class Echo:
    spec = ToolSpec(name="echo", description="Echo the text back.", parameters={"type": "object"})

    async def run(self, arguments, context: ToolContext) -> ToolOutcome:
        return ToolOutcome(text=str(arguments.get("text", "")))


class Broken:
    spec = ToolSpec(name="broken", description="Always fails.", parameters={"type": "object"})

    async def run(self, arguments, context: ToolContext) -> ToolOutcome:
        raise RuntimeError("disk on fire")


def setup(*steps, max_steps=8, tools=None):
    store = MemoryStore()
    provider = ScriptedProvider(steps)
    deps = Deps(
        store=store,
        events=RecordingEvents(),
        provider=provider,
        tools=tools if tools is not None else {"echo": Echo(), "broken": Broken()},
    )
    config = TurnConfig(
        session_id=1,
        system_prompt="You are terse.",
        max_steps=max_steps,
        max_output_tokens=100,
        model="m",
    )
    return store, provider, deps, config


async def test_a_reply_ends_the_turn_and_streams_deltas():
    store, provider, deps, config = setup(reply("Hello there, friend."))
    await store.append(1, kind="user", content="hi")
    assert await run_turn(config, deps) == "reply"
    assert [e.kind for e in store.entries] == ["user", "assistant"]
    assert "".join(deps.events.deltas) == "Hello there, friend."
    assert store.entries[1].data["usage"]["output_tokens"] > 0
    sent = provider.requests[0].messages
    assert [m.kind for m in sent] == ["system", "user"]


async def test_tool_calls_run_and_results_are_paired():
    store, provider, deps, config = setup(
        reply(
            "",
            ("c1", "echo", '{"text": "ping"}'),
            ("c2", "nope", "{}"),
            ("c3", "echo", "{not json"),
            ("c4", "broken", "{}"),
        ),
        reply("done"),
    )
    await store.append(1, kind="user", content="go")
    assert await run_turn(config, deps) == "reply"
    results = [e for e in store.entries if e.kind == "tool_result"]
    assert [(r.data["call_id"], r.data["is_error"]) for r in results] == [
        ("c1", False),
        ("c2", True),
        ("c3", True),
        ("c4", True),
    ]
    assert results[0].content == "ping"
    assert "Unknown tool 'nope'" in results[1].content
    assert "not a JSON object" in results[2].content
    assert "disk on fire" in results[3].content
    second = provider.requests[1].messages
    assert [m.kind for m in second] == ["system", "user", "assistant"] + ["tool_result"] * 4


async def test_provider_failure_becomes_a_notice_and_the_session_goes_on():
    store, provider, deps, config = setup(
        ProviderError("quota", code="rate_limited", retryable=True), reply("back")
    )
    await store.append(1, kind="user", content="one")
    assert await run_turn(config, deps) == "provider_error"
    assert store.entries[-1].kind == "notice"
    assert store.entries[-1].data == {"code": "provider_error", "error": "rate_limited"}
    await store.append(1, kind="user", content="two")
    assert await run_turn(config, deps) == "reply"
    assert store.entries[-1].content == "back"


async def test_max_steps_stops_a_tool_loop():
    loop_step = reply("", ("c", "echo", "{}"))
    store, provider, deps, config = setup(*[loop_step] * 5, max_steps=3)
    await store.append(1, kind="user", content="spin")
    assert await run_turn(config, deps) == "max_steps"
    assert len(provider.requests) == 3
    assert store.entries[-1].data["code"] == "max_steps"


async def test_drive_runs_queued_input_at_the_turn_boundary():
    store, provider, deps, config = setup(reply("first"), reply("second"))
    await store.append(1, kind="user", content="a")
    store.queued.append("b")
    await drive(config, deps)
    assert [(e.kind, e.content) for e in store.entries] == [
        ("user", "a"),
        ("assistant", "first"),
        ("user", "b"),
        ("assistant", "second"),
    ]


def test_an_interrupted_call_gets_an_error_result_and_orphans_are_dropped():
    entries = [
        LogEntry(seq=1, kind="user", content="x"),
        LogEntry(
            seq=2,
            kind="assistant",
            content="",
            data={"tool_calls": [{"id": "a", "name": "echo", "arguments": "{}"}]},
        ),
        LogEntry(seq=3, kind="notice", content="interrupted", data={"code": "x"}),
        LogEntry(seq=4, kind="tool_result", content="late", data={"call_id": "zzz"}),
        LogEntry(seq=5, kind="user", content="y"),
    ]
    ctx = assemble(system_prompt="", tools=[], entries=entries)
    kinds = [m.kind for m in ctx.messages]
    assert kinds == ["user", "assistant", "tool_result", "user"]
    result = ctx.messages[2]
    assert isinstance(result, ToolResultMessage)
    assert (result.call_id, result.text, result.is_error) == ("a", MISSING_RESULT, True)


def test_context_blocks_name_seqs_and_count_tokens():
    entries = [
        LogEntry(seq=1, kind="user", content="hello world", tokens=None),
        LogEntry(seq=2, kind="notice", content="not for the model"),
        LogEntry(seq=3, kind="assistant", content="hi", tokens=7),
    ]
    ctx = assemble(system_prompt="sys", tools=[Echo.spec], entries=entries)
    assert [(b.kind, b.role, b.seq) for b in ctx.blocks] == [
        ("system", "system", None),
        ("system", "tools", None),
        ("entry", "user", 1),
        ("entry", "assistant", 3),
    ]
    assert ctx.blocks[3].tokens == 1, "counted by the session's counter, not a stored figure"
    assert json.loads(ctx.blocks[1].text)[0]["name"] == "echo"
    assert ctx.tokens == sum(b.tokens for b in ctx.blocks)


async def test_every_model_call_renews_the_lease_first_and_a_lost_one_stops_the_turn():
    from harness.ports import LeaseLost

    echo = ("c1", "echo", json.dumps({"text": "x"}))
    store, provider, deps, config = setup(reply("Echoing.", echo), reply("Done."))
    await store.append(1, kind="user", content="hi")
    renewals = []

    async def keep_alive(session_id):
        renewals.append(len(provider.requests))
        if len(renewals) == 3:
            raise LeaseLost("taken over")

    store.keep_alive = keep_alive  # type: ignore[method-assign]
    assert await run_turn(config, deps) == "reply"
    assert renewals == [0, 1]  # before each of the two calls, none after
    await store.append(1, kind="user", content="again")
    with pytest.raises(LeaseLost):
        await run_turn(config, deps)
    assert len(provider.requests) == 2  # the third call was never made


async def test_a_store_that_appends_last_gets_the_turns_final_reply_that_way():
    class LastAware(MemoryStore):
        def __init__(self):
            super().__init__()
            self.last: list[str] = []

        async def append_last(self, session_id, **fields):
            self.last.append(fields["content"])
            return await self.append(session_id, **fields)

    echo = ("c1", "echo", json.dumps({"text": "x"}))
    _, provider, _, config = setup(reply("Echoing.", echo), reply("Done."))
    store = LastAware()
    await store.append(1, kind="user", content="hi")
    deps = Deps(store=store, events=RecordingEvents(), provider=provider, tools={"echo": Echo()})
    assert await run_turn(config, deps) == "reply"
    assert store.last == ["Done."]  # the reply that called a tool was a plain append
    assert [e.kind for e in store.entries] == ["user", "assistant", "tool_result", "assistant"]
