"""set_timer, cancel_timer and ask_user through the real turn loop, folded into state."""

from __future__ import annotations

import json

import pytest

from harness.loop import run_turn
from harness.messages import LogEntry
from harness.runtime import Deps, TurnConfig
from harness.state import VERSION, deserialise, fold, serialise
from harness.testing import MemoryStore, RecordingEvents, ScriptedProvider, reply
from harness.tools import builtin_tools


def config() -> TurnConfig:
    return TurnConfig(
        session_id=1, system_prompt="", max_steps=6, max_output_tokens=None, model="m"
    )


async def run(*steps, store: MemoryStore | None = None):
    store = store or MemoryStore()
    provider = ScriptedProvider(steps)
    deps = Deps(store=store, events=RecordingEvents(), provider=provider, tools=builtin_tools())
    await store.append(1, kind="user", content="go")
    end = await run_turn(config(), deps)
    return store, end, provider


def call(name: str, arguments: object, call_id: str = "c1") -> tuple[str, str, str]:
    return (call_id, name, json.dumps(arguments))


async def test_set_timer_arms_a_timer_that_cancel_and_firing_disarm():
    store, end, _ = await run(
        reply("", call("set_timer", {"seconds": 90, "message": "check the build"})),
        reply("Armed."),
    )
    assert end == "reply"
    result = store.entries[2]
    timer = result.data["timer"]
    assert result.data["is_error"] is False and timer["id"] in result.content
    state = fold(store.entries)
    assert [(t.id, t.message, t.seconds) for t in state.timers] == [
        (timer["id"], "check the build", 90.0)
    ]
    fired = LogEntry(seq=99, kind="timer", content="check the build", data={"timer": timer["id"]})
    assert fold([fired], state).timers == ()

    await run(reply("", call("cancel_timer", {"id": timer["id"]}, "c2")), reply("ok"), store=store)
    assert fold(store.entries).timers == ()


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"seconds": -5, "message": "x"}, "more than 0"),
        ({"seconds": 0, "message": "x"}, "more than 0"),
        ({"seconds": 10**9, "message": "x"}, "at most"),
        ({"seconds": "soon", "message": "x"}, "must be a number"),
        ({"seconds": True, "message": "x"}, "must be a number"),
        ({"seconds": 5, "message": "  "}, "non-empty"),
        ({"seconds": 5}, "non-empty"),
    ],
)
async def test_bad_timer_arguments_are_an_error_result_and_arm_nothing(arguments, says):
    store, _, _ = await run(reply("", call("set_timer", arguments)), reply("ok"))
    result = store.entries[2]
    assert result.data["is_error"] is True and says in result.content
    assert fold(store.entries).timers == ()


async def test_cancelling_an_unknown_timer_is_an_error_result():
    store, _, _ = await run(reply("", call("cancel_timer", {"id": "t-nope"})), reply("ok"))
    assert store.entries[2].data["is_error"] is True
    assert "No armed timer 't-nope'" in store.entries[2].content


async def test_malformed_arguments_are_an_error_result():
    store, _, _ = await run(reply("", ("c1", "set_timer", "{not json")), reply("ok"))
    assert store.entries[2].data["is_error"] is True
    assert fold(store.entries).timers == ()


async def test_ask_user_ends_the_turn_with_a_pending_question():
    store, end, provider = await run(
        reply("", call("ask_user", {"question": "Which DB?", "options": ["SQLite", "PG"]})),
        reply("never reached"),
    )
    assert end == "question"
    assert len(provider.requests) == 1, "no model call after the question"
    question = fold(store.entries).questions[0]
    assert (question.question, question.options) == ("Which DB?", ("SQLite", "PG"))
    answer = LogEntry(
        seq=50, kind="answer", content="PG", data={"question": question.id, "asked": "Which DB?"}
    )
    assert fold([answer], fold(store.entries)).questions == ()


@pytest.mark.parametrize(
    "arguments",
    [{"question": ""}, {"question": "ok?", "options": "yes"}, {"question": "ok?", "options": [""]}],
)
async def test_a_bad_question_does_not_end_the_turn(arguments):
    store, end, _ = await run(reply("", call("ask_user", arguments)), reply("fine"))
    assert end == "reply"
    assert store.entries[2].data["is_error"] is True
    assert fold(store.entries).questions == ()


async def test_a_boundary_carries_the_durable_state_verbatim():
    store, _, _ = await run(
        reply("", call("set_timer", {"seconds": 60, "message": "ping"})), reply("ok")
    )
    before = fold(store.entries)
    carried = serialise(before)
    boundary = LogEntry(
        seq=1,
        kind="boundary",
        content="summary",
        data={
            "first_kept_seq": 2,
            "carried": {
                k: carried[k]
                for k in ("tasks", "timers", "questions", "subagents", "loaded_skills")
            },
        },
    )
    forked = fold([boundary])
    assert forked.timers == before.timers


def test_a_compact_command_is_pending_until_the_boundary():
    command = LogEntry(
        seq=3,
        kind="command",
        content="/compact keep paths",
        data={"name": "compact", "instructions": "keep paths"},
    )
    state = fold([command])
    assert state.pending_compact == {"seq": 3, "instructions": "keep paths"}
    boundary = LogEntry(seq=4, kind="boundary", content="s", data={"first_kept_seq": 3})
    assert fold([boundary], state).pending_compact is None


def test_the_current_version_round_trips():
    state = deserialise(
        json.loads(
            (
                __import__("pathlib").Path(__file__).parent / "fixtures" / f"state-v{VERSION}.json"
            ).read_text()
        )
    )
    assert deserialise(serialise(state)) == state
    assert state.timers[0].id == "t-0a1b2c3d"
    assert state.questions[0].options == ("SQLite", "PostgreSQL")
