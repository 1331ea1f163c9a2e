"""The worker hop: a message POSTed to one web process, its first `delta` on another's watchers.

A deployed stack on PostgreSQL and Redis (`DATABASE_URL` and `REDIS_URL` must name them):
two `daphne` processes, one `manage.py runworker horsie-turns`, and the scripted
OpenAI-compatible server as its own process, answering at once. Messages go to web process A
(no `?wait`); the watchers are websockets on web process B, so every event crosses the
channel layer. Each sample waits until every watcher has seen the session idle again.

Prints medians of:
- POST → first delta, with 1 and with 20 watchers (per sample: the median watcher, and the
  slowest);
- the model server's first text → a watcher's delta (both clocks are this machine's wall
  clock): the hop through the worker, Redis and the other web process;
- the first turn against the tenth: on freshly started processes (the first turn sent
  `SETTLE` seconds after they start, as a first user would), and on a new card (a provider
  the worker has not built yet), POST → first delta.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any

import websockets
from _setup import ROOT, median

sys.path.insert(0, str(ROOT))
from tests.support.stack import BIN, ScriptedModel, Stack, free_port  # noqa: E402

SAMPLES = 30
SETTLE = 8.0
NEW_CARDS = 5
REPLY = "A short streamed answer, in a few small chunks, from the scripted model."


@dataclass
class Watcher:
    """One websocket on web process B; every message it receives is timestamped on arrival."""

    url: str
    queue: asyncio.Queue[tuple[float, dict[str, Any]]] = field(default_factory=asyncio.Queue)

    async def run(self, ready: asyncio.Event) -> None:
        async with websockets.connect(self.url, origin="http://127.0.0.1", max_size=None) as ws:
            ready.set()
            async for raw in ws:
                await self.queue.put((time.time(), json.loads(raw)))

    async def next_turn(self) -> float:
        """When this turn's first delta arrived; returns once the session is idle again."""
        first: float | None = None
        while True:
            at, event = await self.queue.get()
            if event["type"] == "delta" and first is None:
                first = at
            if event["type"] == "status" and event["status"] == "idle" and first is not None:
                return first


@dataclass
class Sample:
    post_to_delta: list[float]  # one per watcher, seconds
    text_to_delta: list[float]
    post_answered: float  # POST → its 202
    post_to_text: float  # POST → the model server's first text


def post(url: str, token: str, session: int, text: str) -> None:
    request = urllib.request.Request(
        f"{url}/api/v1/sessions/{session}/messages",
        data=json.dumps({"text": text}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=60).read()


async def watchers_on(urls: list[str]) -> tuple[list[Watcher], list[asyncio.Task[None]]]:
    watchers = [Watcher(url) for url in urls]
    tasks = []
    for watcher in watchers:
        ready = asyncio.Event()
        tasks.append(asyncio.create_task(watcher.run(ready)))
        await asyncio.wait_for(ready.wait(), 30)
    for watcher in watchers:  # the catch-up, status and state sent on connect
        await asyncio.sleep(0.2)
        while not watcher.queue.empty():
            watcher.queue.get_nowait()
    return watchers, tasks


async def one_turn(
    stack: Stack, web_a: str, session: int, watchers: list[Watcher], model: ScriptedModel, n: int
) -> Sample:
    started = time.time()
    await asyncio.to_thread(post, web_a, stack.token, session, f"Sample {n}: " + "x" * 180)
    answered = time.time() - started
    firsts = await asyncio.gather(*(w.next_turn() for w in watchers))
    text_at = (await asyncio.to_thread(model.first_text))[-1]
    return Sample(
        [f - started for f in firsts], [f - text_at for f in firsts], answered, text_at - started
    )


async def run_samples(
    stack: Stack, web_a: str, port_b: int, session: int, model: ScriptedModel, count: int, n: int
) -> list[Sample]:
    urls = [stack.ws_url(session, port=port_b)] * count
    watchers, tasks = await watchers_on(urls)
    try:
        return [await one_turn(stack, web_a, session, watchers, model, i) for i in range(n)]
    finally:
        for task in tasks:
            task.cancel()


def report(label: str, samples: list[Sample]) -> None:
    post_mid = [median(s.post_to_delta) for s in samples]
    post_max = [max(s.post_to_delta) for s in samples]
    gap_mid = [median(s.text_to_delta) for s in samples]
    gap_max = [max(s.text_to_delta) for s in samples]
    ms = 1000
    print(
        f"{label}: POST → first delta {median(post_mid) * ms:6.1f} ms "
        f"(slowest watcher {median(post_max) * ms:6.1f}); "
        f"server first text → delta {median(gap_mid) * ms:6.1f} ms "
        f"(slowest {median(gap_max) * ms:6.1f})"
    )
    print(
        f"    POST → 202 {median([s.post_answered for s in samples]) * ms:6.1f} ms, "
        f"POST → server first text {median([s.post_to_text for s in samples]) * ms:6.1f} ms"
    )


def new_card_session(stack: Stack, model: ScriptedModel, name: str) -> int:
    status, card = stack.api(
        "POST",
        "/models",
        {
            "name": name,
            "wire": "openai_chat",
            "model": name,
            "base_url": model.base_url,
            "context_window": 8000,
        },  # fmt: skip
    )
    assert status == 201, card
    status, session = stack.api("POST", "/sessions", {"model": card["id"], "title": name})
    assert status == 201, session
    return int(session["id"])


async def first_and_tenth(
    stack: Stack, web_a: str, port_b: int, session: int, model: ScriptedModel
) -> tuple[float, float]:
    samples = await run_samples(stack, web_a, port_b, session, model, 1, 10)
    return samples[0].post_to_delta[0], samples[9].post_to_delta[0]


async def measure(stack: Stack, model: ScriptedModel, web_a: str, port_b: int) -> None:
    ms = 1000
    cold = stack.session_on(model, title="cold")
    first, tenth = await first_and_tenth(stack, web_a, port_b, cold, model)
    print(
        f"fresh processes: turn 1 POST → first delta {first * ms:.1f} ms, "
        f"turn 10 {tenth * ms:.1f} ms"
    )
    pairs = []
    for n in range(NEW_CARDS):
        session = new_card_session(stack, model, f"card-{n}")
        pairs.append(await first_and_tenth(stack, web_a, port_b, session, model))
    print(
        f"new card, warm processes (median of {NEW_CARDS}): turn 1 "
        f"{median([p[0] for p in pairs]) * ms:.1f} ms, "
        f"turn 10 {median([p[1] for p in pairs]) * ms:.1f} ms"
    )
    session = stack.session_on(model, title="hop")
    await run_samples(stack, web_a, port_b, session, model, 1, 5)  # warm-up
    for count in (1, 20):
        report(f"{count:2d} watcher(s), median of {SAMPLES}", await run_samples(
            stack, web_a, port_b, session, model, count, SAMPLES
        ))  # fmt: skip


def worker_ready(stack: Stack) -> None:
    """Start the worker and wait until it listens: a turn sent earlier would wait for it."""
    command = [str(BIN / "python"), "manage.py", "runworker", "horsie-turns"]
    process = subprocess.Popen(
        command, cwd=ROOT, env=stack.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    stack.processes["worker"] = process  # type: ignore[assignment]
    assert process.stderr is not None
    for line in process.stderr:
        if "Running worker" in line:
            break
    threading.Thread(target=process.stderr.read, daemon=True).start()


def main() -> None:
    database, redis = os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL", "")
    if not (database.startswith("postgres") and redis.startswith("redis")):
        sys.exit("worker_hop needs DATABASE_URL (PostgreSQL) and REDIS_URL (Redis)")
    stack = Stack(redis=True)
    try:
        model = stack.scripted_model([{"text": REPLY, "repeat": True}])
        web_a = stack.start_web(quiet=True)
        port_b = free_port()
        stack.start_web(quiet=True, name="web-b", port=port_b)
        worker_ready(stack)
        time.sleep(SETTLE)
        asyncio.run(measure(stack, model, web_a, port_b))
    finally:
        stack.close()


if __name__ == "__main__":
    main()
