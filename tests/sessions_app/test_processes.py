"""The stack as separate processes: a killed server loses nothing; workers run turns."""

from __future__ import annotations

import asyncio
import json
import os

import pytest
import websockets

from tests.support.stack import Stack, wait_until


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


def test_killing_the_server_mid_turn_loses_no_stored_entry(stack_factory):
    stack = stack_factory(extra_env={"HORSIE_LEASE_SECONDS": "5"})
    model = stack.scripted_model(
        [
            {"text": "I was saying something long when", "stall": True},
            {"text": "Back again."},
        ]
    )
    stack.start_web()
    session = stack.session_on(model, title="crash")
    status, posted = stack.api("POST", f"/sessions/{session}/messages", {"text": "remember me"})
    assert (status, posted) == (202, {"seq": 1, "queued": False})
    assert asyncio.run(first_delta(stack.ws_url(session)))
    stack.kill("web")
    stack.start_web()
    _, page = stack.api("GET", f"/sessions/{session}/entries")
    assert [(e["seq"], e["kind"], e["content"]) for e in page["entries"]] == [
        (1, "user", "remember me")
    ]
    wait_until(
        lambda: stack.api("GET", f"/sessions/{session}")[1]["status"] == "idle",
        30,
        "the dead runner's lease expiring",
    )
    status, done = stack.api("POST", f"/sessions/{session}/messages?wait=30", {"text": "again"})
    assert status == 200, done
    assert done["status"] == "idle"
    kinds = [(e["kind"], e["data"].get("code")) for e in done["entries"]]
    assert kinds == [("notice", "turn_interrupted"), ("user", None), ("assistant", None)]
    assert done["entries"][-1]["content"] == "Back again."
    _, page = stack.api("GET", f"/sessions/{session}/entries")
    assert [e["seq"] for e in page["entries"]] == [1, 2, 3, 4]


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
