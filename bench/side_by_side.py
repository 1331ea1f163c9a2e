"""Horsie against openai-agents, the same workload, interleaved turn by turn.

Horsie runs as it serves users: daphne on a throwaway database, each turn a
`POST /sessions/{id}/messages?wait=60` on a 128k-window card, on one HTTP/1.1 connection kept
open (as an API client such as httpx or requests keeps it), measured once the web process
says it is ready (`GET /api/v1/health`: its start-up warming done). openai-agents runs in this
process: `Runner.run` with an `OpenAIChatCompletionsModel` and its `SQLiteSession` (a file).
Each talks to its own instant mock server process (bench/mock_openai_server.py), which times
every request it serves; harness time = a turn's wall time minus the server's time in it.
Every turn's user message is 200 characters; with `--tools`-style runs (N = 1,000 here) every
fifth asks for a tool call (Horsie's `read_entry`, an equivalent function tool for agents).

Prints, per N: the median harness time per turn of the first and of the last 10% of turns
(over enough sessions of N turns that each tenth holds 20 turns: 20 sessions at N = 10),
last/first, Horsie/agents, and the last request body each sent (bytes/4). This process is
Horsie's client and openai-agents' host at once: it collects its garbage before each timed
turn, so that neither pays in its turn for what the other left (at N = 1,000 openai-agents'
turns leave plenty). `--quick` runs N = 10, 100.
`--horsie-only` leaves openai-agents out (it then runs in `.venv` too; for profiling Horsie,
whose web process id it prints); `--n N` runs that N alone (with tool calls from 1,000 on).

openai-agents 0.24 needs openai 3, which Horsie (openai 2) cannot share a virtualenv with, so
this script runs in `.venv-bench` (`make bench` builds it from bench/requirements-agents.txt)
and starts Horsie from `.venv`. Asserts nothing.
"""

from __future__ import annotations

import asyncio
import gc
import http.client
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import stack as stack_module  # noqa: E402

stack_module.BIN = ROOT / ".venv" / "bin"
WINDOW = 128_000
TOOL_MARK = "[use the tool]"
INSTRUCTIONS = "You are a careful assistant. Answer briefly."
SAMPLES = 20  # turns per tenth at least: N = 10 runs 20 sessions, N = 100 two


def user_text(n: int, tools: bool) -> str:
    head = f"Turn {n}: " + (TOOL_MARK + " " if tools and n % 5 == 0 else "")
    filler = "the crates on the east dock were weighed twice and the numbers agree. "
    return (head + filler * 4)[:200]


class Mock:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "mock_openai_server.py"), "0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.last_bytes = 0

    def served(self) -> float:
        """Seconds the server spent on the requests since the last call."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/__times", timeout=10) as r:
            answer = json.loads(r.read())
        self.last_bytes = int(answer["last_bytes"])
        return float(sum(answer["times"]))

    def close(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)


@dataclass
class Run:
    name: str
    sessions: list[list[float]] = field(default_factory=list)  # harness seconds per turn
    prompt_chars: int = 0


class Horsie:
    def __init__(self, mock: Mock) -> None:
        self.mock = mock
        self.stack = stack_module.Stack(extra_env={"HORSIE_DISPATCH": "inprocess"})
        self.stack.start_web(quiet=True)
        self.stack.wait_ready()  # as openai-agents, measured once its imports are done
        status, card = self.stack.api("POST", "/models", {
            "name": "mock", "wire": "openai_chat", "model": "mock", "base_url": mock.base_url,
            "context_window": WINDOW, "max_output_tokens": 1000,
        })  # fmt: skip
        assert status == 201, card

        self.card = int(card["id"])
        # One connection kept open for the turns, as an API client (httpx, requests) keeps it.
        self.connection = http.client.HTTPConnection("127.0.0.1", self.stack.port, timeout=330)
        self.headers = {"Authorization": f"Bearer {self.stack.token}",
                        "Content-Type": "application/json"}  # fmt: skip

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        self.connection.request("POST", path, json.dumps(body).encode(), self.headers)
        response = self.connection.getresponse()
        return response.status, json.loads(response.read())

    def new_session(self) -> int:
        status, created = self.stack.api(
            "POST", "/sessions", {"model": self.card, "system_prompt": INSTRUCTIONS}
        )
        assert status == 201, created
        return int(created["id"])

    def turn(self, session: int, text: str) -> None:
        status, done = self.post(f"/api/v1/sessions/{session}/messages?wait=60", {"text": text})
        kinds = [e["kind"] for e in done.get("entries", [])] if status == 200 else []
        if kinds[-1:] != ["assistant"]:
            raise RuntimeError(f"Horsie's turn did not end in a reply: {status} {done}")

    def close(self) -> None:
        self.connection.close()
        self.stack.close()


class Agents:
    def __init__(self, mock: Mock, folder: Path) -> None:
        from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
        from openai import AsyncOpenAI

        set_tracing_disabled(True)
        self.folder = folder

        @function_tool
        def read_entry(seq: int) -> str:
            """Read one log entry whole, by its seq."""
            return user_text(seq, tools=False)

        client = AsyncOpenAI(base_url=mock.base_url, api_key="mock", max_retries=0)
        model = OpenAIChatCompletionsModel(model="mock", openai_client=client)
        self.agent = Agent(name="bench", instructions=INSTRUCTIONS, model=model, tools=[read_entry])

    def new_session(self, name: str) -> Any:
        from agents import SQLiteSession

        return SQLiteSession(name, str(self.folder / f"{name}.sqlite3"))

    async def turn(self, session: Any, text: str) -> None:
        from agents import Runner

        result = await Runner.run(self.agent, text, session=session)
        if not result.final_output:
            raise RuntimeError("openai-agents' turn ended without a reply")


def measure(n: int, tools: bool, horsie: Horsie, agents: Agents | None,
            loop: asyncio.AbstractEventLoop, mocks: tuple[Mock, Mock]) -> tuple[Run, ...]:  # fmt: skip
    """N turns in each of enough fresh sessions that each tenth has `SAMPLES` turns."""
    ours, theirs = Run("Horsie"), Run("openai-agents")
    for _ in range(math.ceil(SAMPLES / tenth_size(n))):
        ours.sessions.append([])
        theirs.sessions.append([])
        session = horsie.new_session()
        agent_session = agents.new_session(f"n{n}-{time.monotonic_ns()}") if agents else None
        for mock in mocks:
            mock.served()
        for turn in range(1, n + 1):
            text = user_text(turn, tools)
            gc.collect()  # untimed: neither pays in its turn for the other's garbage here
            began = time.perf_counter()
            horsie.turn(session, text)
            wall = time.perf_counter() - began
            ours.sessions[-1].append(wall - mocks[0].served())
            if agents is None:
                continue
            gc.collect()
            began = time.perf_counter()
            loop.run_until_complete(agents.turn(agent_session, text))
            wall = time.perf_counter() - began
            theirs.sessions[-1].append(wall - mocks[1].served())
    ours.prompt_chars, theirs.prompt_chars = (mock.last_bytes for mock in mocks)
    return (ours, theirs) if agents else (ours,)


def tenth_size(n: int) -> int:
    return max(1, n // 10)


def tenth(run: Run, last: bool) -> float:
    """The median ms of the first (or last) tenth of every session's turns."""
    size = tenth_size(len(run.sessions[0]))
    picked = [t for turns in run.sessions for t in (turns[-size:] if last else turns[:size])]
    return statistics.median(picked) * 1000


def report(n: int, tools: bool, runs: tuple[Run, ...]) -> None:
    label = f"N = {n:,}" + (" (a tool call every 5th turn)" if tools else "")
    print(f"\n{label}: median harness ms per turn (wall - server)")
    print(f"{'':16}{'first 10%':>11}{'last 10%':>11}{'last/first':>12}{'prompt ~tok':>13}")
    for run in runs:
        first, last = tenth(run, False), tenth(run, True)
        print(f"{run.name:16}{first:11.1f}{last:11.1f}{last / first:12.2f}"
              f"{run.prompt_chars // 4:13,}")  # fmt: skip
    if len(runs) == 1:
        return
    ours, theirs = runs
    for last in (False, True):
        ratio = tenth(ours, last) / tenth(theirs, last)
        print(f"Horsie / openai-agents, {'last' if last else 'first'} 10%: {ratio:.2f}")


def main() -> None:
    args = sys.argv[1:]
    quick, alone = "--quick" in args, "--horsie-only" in args
    plan = [(10, False), (100, False)] + ([] if quick else [(1000, True)])
    if "--n" in args:
        n = int(args[args.index("--n") + 1])
        plan = [(n, n >= 1000)]
    mocks = (Mock(), Mock())
    horsie = Horsie(mocks[0])
    folder = Path(tempfile.mkdtemp(prefix="horsie-agents-"))
    agents = None if alone else Agents(mocks[1], folder)
    loop = asyncio.new_event_loop()
    try:
        horsie.turn(horsie.new_session(), user_text(0, False))  # warm: the first turn's client
        if agents is None:
            print("Horsie's web process:", horsie.stack.processes["web"].pid, flush=True)
        else:
            loop.run_until_complete(agents.turn(agents.new_session("warm"), user_text(0, False)))
        for n, tools in plan:
            report(n, tools, measure(n, tools, horsie, agents, loop, mocks))
    finally:
        loop.close()
        horsie.close()
        for mock in mocks:
            mock.close()


if __name__ == "__main__":
    main()
