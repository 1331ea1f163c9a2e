"""Time from the message POST to the first websocket `delta`, on loopback, median of 50.

A real stack: `daphne` on the embedded defaults (or PostgreSQL/Redis when `DATABASE_URL`
and `REDIS_URL` are set), a scripted OpenAI-compatible model server answering at once, and
one websocket watcher. Each sample waits for the turn to settle before the next POST.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import urllib.request

import websockets
from _setup import ROOT, median

sys.path.insert(0, str(ROOT))
from tests.support.stack import Stack  # noqa: E402

SAMPLES = 50


async def measure(stack: Stack, session: int) -> list[float]:
    times = []
    async with websockets.connect(stack.ws_url(session), origin="http://127.0.0.1") as ws:
        for n in range(SAMPLES):
            started = time.perf_counter()
            await asyncio.to_thread(post, stack, session, f"Sample {n}")
            first = None
            async for raw in ws:
                event = json.loads(raw)
                if event["type"] == "delta" and first is None:
                    first = time.perf_counter() - started
                if event["type"] == "status" and event["status"] == "idle" and first:
                    break
            times.append(first or 0.0)
    return times


def post(stack: Stack, session: int, text: str) -> None:
    request = urllib.request.Request(
        f"{stack.url}/api/v1/sessions/{session}/messages",
        data=json.dumps({"text": text}).encode(),
        headers={"Authorization": f"Bearer {stack.token}", "Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=30).read()


def main() -> None:
    stack = Stack()
    try:
        model = stack.scripted_model([{"text": "A short streamed answer.", "repeat": True}])
        stack.start_web()
        session = stack.session_on(model, title="first delta")
        times = asyncio.run(measure(stack, session))
        print(
            f"POST → first delta, median of {SAMPLES}: {median(times) * 1000:.1f} ms "
            f"(min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f})"
        )
    finally:
        stack.close()


if __name__ == "__main__":
    main()
