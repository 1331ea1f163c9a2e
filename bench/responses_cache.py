"""The cached-token share on the Responses wire across 20 turns and one compaction.

The real `openai_responses` wire and the core's turn loop (`run_turn` on an in-memory
store, automatic compaction on) against the scripted Responses server process
(tests/contract/scripted_responses_server.py) and its cache accounting: OpenAI's automatic
prompt caching, exact prefixes only, 1,024 tokens at least, in steps of 128. Each of 20 turns
posts about 180 tokens of figures; the window is set so that one compaction falls inside.
Prints, per call, the prompt and the part read from the cache (the compaction's summary call
marked), then the share over all calls: cached input tokens / input tokens. The figure
counts the server's tokens, never Horsie's estimate. Asserts nothing.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _setup import ROOT

sys.path.insert(0, str(ROOT))

from harness.compaction.policy import Policy  # noqa: E402
from harness.loop import run_turn  # noqa: E402
from harness.providers.base import CardConfig  # noqa: E402
from harness.providers.openai_responses import build  # noqa: E402
from harness.runtime import Deps, TurnConfig  # noqa: E402
from harness.testing import MemoryStore, RecordingEvents  # noqa: E402
from harness.tools import builtin_tools  # noqa: E402

SERVER = ROOT / "tests" / "contract" / "scripted_responses_server.py"
TURNS = 20
WINDOW = 5_000
MAX_OUTPUT = 300
SYSTEM = "You are a careful assistant who keeps the dock's weigh log. " * 40
REPLY = {"text": "Noted: the figures add up and nothing is out of the ordinary.", "repeat": True}


def server() -> tuple[subprocess.Popen[str], str]:
    script = Path(tempfile.mkdtemp(prefix="horsie-bench-")) / "script.json"
    script.write_text(json.dumps([REPLY]))
    process = subprocess.Popen(
        [sys.executable, str(SERVER), str(script), "0"], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    return process, f"http://127.0.0.1:{int(process.stdout.readline())}/v1"


async def run(base_url: str) -> list[tuple[str, dict[str, int]]]:
    card = CardConfig(wire="openai_responses", model="gpt-scripted", base_url=base_url,
                      api_key="sk-bench", context_window=WINDOW, max_output_tokens=MAX_OUTPUT)  # fmt: skip
    store = MemoryStore()
    config = TurnConfig(
        session_id=1, system_prompt=SYSTEM, max_steps=3, max_output_tokens=MAX_OUTPUT,
        model=card.model, policy=Policy(window=WINDOW, max_output_tokens=MAX_OUTPUT),
    )  # fmt: skip
    deps = Deps(store=store, events=RecordingEvents(), provider=build(card, {}),
                tools=builtin_tools())  # fmt: skip
    for turn in range(TURNS):
        figures = ", ".join(
            f"crate {4400 + turn * 40 + i}: {400 + i * 1.5:.1f} kg" for i in range(24)
        )
        await store.append(1, kind="user", content=f"Turn {turn + 1}: {figures}.")
        await run_turn(config, deps)
    calls = []
    for entry in store.entries:
        usage = entry.data.get("usage")
        if entry.kind in ("assistant", "boundary") and usage:
            calls.append(("compaction" if entry.kind == "boundary" else "turn", usage))
    return calls


def main() -> None:
    process, base_url = server()
    try:
        calls = asyncio.run(run(base_url))
    finally:
        process.terminate()
        process.wait(timeout=10)
    print(f"{'call':>4} {'kind':>10} {'input':>7} {'cached':>7} {'share':>6}")
    for number, (kind, usage) in enumerate(calls, 1):
        share = usage["cached_tokens"] / usage["input_tokens"] if usage["input_tokens"] else 0.0
        print(f"{number:>4} {kind:>10} {usage['input_tokens']:>7,} {usage['cached_tokens']:>7,} "
              f"{share:>6.1%}")  # fmt: skip
    total_in = sum(u["input_tokens"] for _, u in calls)
    total_cached = sum(u["cached_tokens"] for _, u in calls)
    compactions = sum(kind == "compaction" for kind, _ in calls)
    print(f"{TURNS} turns, {compactions} compaction(s): {total_cached:,} of {total_in:,} input "
          f"tokens read from the cache, a share of {total_cached / total_in:.1%}")  # fmt: skip


if __name__ == "__main__":
    main()
