"""The stack as separate processes: a killed server or worker loses nothing, a crashed turn
is closed or resumed by another process, timers outlive a restart, workers run turns."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import datetime

import pytest
import websockets

from tests.support.stack import Stack, wait_until

CLUSTER = os.environ.get("DATABASE_URL", "").startswith("postgres") and os.environ.get("REDIS_URL")


@pytest.fixture
def stack_factory():
    stacks = []

    def make(**kwargs):
        stacks.append(Stack(**kwargs))
        return stacks[-1]

    yield make
    for stack in stacks:
        stack.close()


async def first_delta(url: str) -> str:
    async with asyncio.timeout(30), websockets.connect(url, origin="http://127.0.0.1") as ws:
        async for raw in ws:
            event = json.loads(raw)
            if event["type"] == "delta":
                return event["text"]
    raise AssertionError("the socket closed before a delta")


def call(call_id: str, name: str, **arguments) -> dict:
    return {"id": call_id, "name": name, "arguments": json.dumps(arguments)}


def log_of(stack: Stack, session: int) -> list[dict]:
    """The whole log through `GET /entries`, page by page."""
    entries: list[dict] = []
    while True:
        after = entries[-1]["seq"] if entries else 0
        status, page = stack.api("GET", f"/sessions/{session}/entries?after={after}&limit=500")
        assert status == 200, page
        entries += page["entries"]
        if not page["has_more"]:
            return entries


def assert_log_whole(entries: list[dict]) -> None:
    """No seq missing or repeated, and every tool call has exactly one result, after it."""
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    calls = {
        c["id"]: e["seq"]
        for e in entries
        if e["kind"] == "assistant"
        for c in e["data"].get("tool_calls", [])
    }
    results = [e for e in entries if e["kind"] == "tool_result"]
    assert sorted(r["data"]["call_id"] for r in results) == sorted(calls)
    assert all(r["seq"] > calls[r["data"]["call_id"]] for r in results)


def settled_after(stack: Stack, session: int, kind: str, code: str | None = None) -> list[dict]:
    """The log, once an entry of `kind` (a notice with `code`) is followed by an assistant
    reply and the session is idle again."""

    def check() -> list[dict] | None:
        if stack.api("GET", f"/sessions/{session}")[1]["status"] != "idle":
            return None
        entries = log_of(stack, session)
        marks = [
            n
            for n, e in enumerate(entries)
            if e["kind"] == kind and (code is None or e["data"].get("code") == code)
        ]
        if marks and any(e["kind"] == "assistant" for e in entries[marks[-1] :]):
            return entries
        return None

    return wait_until(check, 60, f"a {kind} entry, a reply after it, and an idle session")


def test_killing_the_server_mid_turn_loses_no_stored_entry(stack_factory):
    stack = stack_factory(extra_env={"HORSIE_LEASE_SECONDS": "5"})
    model = stack.scripted_model(
        [
            {"text": "I was saying something long when", "stall": True},
            {"text": "Back again."},
            {"text": "And again."},
        ]
    )
    stack.start_web()
    session = stack.session_on(model, title="crash")
    status, posted = stack.api("POST", f"/sessions/{session}/messages", {"text": "remember me"})
    assert (status, posted) == (202, {"seq": 1, "queued": False})
    assert asyncio.run(first_delta(stack.ws_url(session)))
    stack.kill("web")
    stack.start_web()
    assert [(e["seq"], e["kind"], e["content"]) for e in log_of(stack, session)] == [
        (1, "user", "remember me")
    ]
    # The new server's scheduler takes the session over once the dead runner's lease expires,
    # and resumes the turn: the model still owes a reply to "remember me".
    entries = settled_after(stack, session, "notice", "turn_interrupted")
    assert [(e["kind"], e["content"]) for e in entries[1:]] == [
        ("notice", entries[1]["content"]),
        ("assistant", "Back again."),
    ]
    assert entries[1]["data"] == {"code": "turn_interrupted", "resumed": True}
    status, done = stack.api("POST", f"/sessions/{session}/messages?wait=30", {"text": "again"})
    assert status == 200, done
    assert done["status"] == "idle"
    assert [(e["kind"], e["content"]) for e in done["entries"]] == [
        ("user", "again"),
        ("assistant", "And again."),
    ]
    assert_log_whole(log_of(stack, session))


@pytest.mark.skipif(not CLUSTER, reason="needs PostgreSQL (DATABASE_URL) and REDIS_URL")
def test_a_worker_killed_mid_tool_call_is_taken_over_by_another(stack_factory):
    """A worker dies while a tool call's result is being written; another process takes the
    session over when the lease expires, closes the open call and resumes the turn."""
    import psycopg

    stack = stack_factory(redis=True, extra_env={"HORSIE_LEASE_SECONDS": "3"})
    model = stack.scripted_model(
        [
            {
                "text": "Planning.",
                "tool_calls": [
                    call("call_todo", "todo_write", tasks=[{"text": "bake", "status": "pending"}]),
                    call("call_timer", "set_timer", seconds=600, message="Check the oven."),
                ],
            },
            {"text": "Picking up after the crash."},
            {"text": "Still here."},
        ]
    )
    stack.start_worker("worker-1")
    stack.start_web()
    session = stack.session_on(model, title="worker crash")
    # The slow tool step: while this transaction holds the armed-timer table, the set_timer
    # result's transaction (its entry, the timer row) waits, uncommitted, inside worker-1.
    with psycopg.connect(stack.env["DATABASE_URL"]) as hold:
        hold.execute("LOCK TABLE sessions_app_armedtimer IN SHARE MODE")
        status, _ = stack.api("POST", f"/sessions/{session}/messages", {"text": "Bake a cake."})
        assert status == 202
        wait_until(
            lambda: stack.sql(
                "SELECT 1 FROM pg_locks JOIN pg_class ON pg_class.oid = pg_locks.relation"
                " WHERE relname = 'sessions_app_armedtimer' AND NOT granted"
            ),
            60,
            "worker-1 writing the set_timer result",
        )
        assert [e["kind"] for e in log_of(stack, session)] == ["user", "assistant", "tool_result"]
        stack.start_worker("worker-2")
        stack.kill("worker-1")
        hold.rollback()

    entries = settled_after(stack, session, "notice", "turn_interrupted")
    status, done = stack.api("POST", f"/sessions/{session}/messages?wait=60", {"text": "There?"})
    assert status == 200, done
    assert done["status"] == "idle"
    assert [(e["kind"], e["content"]) for e in done["entries"]] == [
        ("user", "There?"),
        ("assistant", "Still here."),
    ]

    entries = log_of(stack, session)
    assert_log_whole(entries)
    assert [(e["kind"], e["data"].get("name") or e["data"].get("code")) for e in entries] == [
        ("user", None),
        ("assistant", None),
        ("tool_result", "todo_write"),
        ("tool_result", "set_timer"),
        ("notice", "turn_interrupted"),
        ("assistant", None),
        ("user", None),
        ("assistant", None),
    ]
    todo, timer, notice, resumed = entries[2:6]
    assert todo["data"]["is_error"] is False
    assert timer["data"] == {
        "call_id": "call_timer",
        "name": "set_timer",
        "is_error": True,
        "interrupted": True,
    }
    assert notice["data"] == {"code": "turn_interrupted", "resumed": True}
    assert resumed["content"] == "Picking up after the crash."
    # The interrupted call changed nothing: no timer armed, in the state or the scheduler.
    _, state = stack.api("GET", f"/sessions/{session}/state")
    assert state["tasks"] == [{"text": "bake", "status": "pending"}]
    assert state["timers"] == []
    assert stack.sql("SELECT COUNT(*) FROM sessions_app_armedtimer") == [(0,)]


def test_a_timer_armed_before_a_restart_fires_once_after_it(stack_factory):
    stack = stack_factory()
    model = stack.scripted_model(
        [
            {"tool_calls": [call("call_timer", "set_timer", seconds=3, message="Check the oven.")]},
            {"text": "I will remind you."},
            {"text": "The oven is ready."},
        ]
    )
    stack.start_web()
    session = stack.session_on(model, title="timer")
    status, done = stack.api(
        "POST", f"/sessions/{session}/messages?wait=30", {"text": "Remind me."}
    )
    assert status == 200, done
    assert [e["kind"] for e in done["entries"]] == ["user", "assistant", "tool_result", "assistant"]
    assert done["entries"][2]["data"]["is_error"] is False
    stack.kill("web")
    restarted = datetime.now().astimezone()
    stack.start_web()

    entries = settled_after(stack, session, "timer")
    assert_log_whole(entries)
    assert [(e["kind"], e["content"]) for e in entries[4:]] == [
        ("timer", "Check the oven."),
        ("assistant", "The oven is ready."),
    ]
    assert datetime.fromisoformat(entries[4]["created_at"]) >= restarted
    # Once: the timer is disarmed in the state and gone from the scheduler's index, and
    # the model was called three times in all.
    _, state = stack.api("GET", f"/sessions/{session}/state")
    assert state["timers"] == []
    assert stack.sql("SELECT COUNT(*) FROM sessions_app_armedtimer") == [(0,)]
    assert len(model.requests()) == 3


async def open_while_idle(url: str, seconds: float) -> bool:
    """Whether a watcher's socket stays open through `seconds` of nothing happening."""
    async with websockets.connect(url, origin="http://127.0.0.1") as ws:
        try:
            async with asyncio.timeout(seconds):
                async for _ in ws:
                    pass
        except TimeoutError:
            return True
        except websockets.ConnectionClosed:
            return False
    return False


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="turn workers need REDIS_URL")
def test_an_idle_worker_and_watcher_outlast_the_channel_layers_poll(stack_factory):
    stack = stack_factory(redis=True)
    model = stack.scripted_model([{"text": "Still awake."}])
    stack.start_worker()
    stack.start_web()
    session = stack.session_on(model, title="idle")
    # channels_redis waits for a message 5 s at a time: idling past that is the point.
    assert asyncio.run(open_while_idle(stack.ws_url(session), 8))
    assert stack.processes["worker"].poll() is None
    status, done = stack.api("POST", f"/sessions/{session}/messages?wait=30", {"text": "Awake?"})
    assert status == 200, done
    assert [e["content"] for e in done["entries"]] == ["Awake?", "Still awake."]


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="turn workers need REDIS_URL")
def test_turns_run_on_a_separate_worker_process(stack_factory):
    stack = stack_factory(redis=True)
    model = stack.scripted_model([{"text": "From the worker."}, {"text": "Again."}])
    stack.start_worker()
    stack.start_web()
    session = stack.session_on(model, title="workers")
    status, done = stack.api("POST", f"/sessions/{session}/messages?wait=60", {"text": "hi"})
    assert status == 200, done
    assert [e["content"] for e in done["entries"]] == ["hi", "From the worker."]
    stack.kill("worker")
    stack.start_worker("worker-2")
    status, done = stack.api("POST", f"/sessions/{session}/messages?wait=60", {"text": "more"})
    assert [e["content"] for e in done["entries"]] == ["more", "Again."]
