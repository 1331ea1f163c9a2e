"""Input tokens of the 1st, 10th and 20th compaction of one session (aim: 20th/1st ≤ 1.1).

The real turn loop and compactor, with `Archivist` (harness.testing) as the model: it
reports each request's size as its usage, writes summaries that keep MARKER lines, and
answers turns with replies of a steady size. The window is 8,000 tokens. A fold that
re-read spans before the previous cut, or a summary chain that grew without bound, would
show as a 20th compaction costlier than the first.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.compaction.policy import Policy  # noqa: E402
from harness.loop import run_turn  # noqa: E402
from harness.runtime import Deps, TurnConfig  # noqa: E402
from harness.testing import Archivist, MemoryStore, RecordingEvents, prompt_size  # noqa: E402
from harness.tools import builtin_tools  # noqa: E402

WINDOW = 8_000
COMPACTIONS = 20


async def main() -> None:
    store = MemoryStore()
    provider = Archivist()
    config = TurnConfig(
        session_id=1,
        system_prompt="You are a careful engineer. " * 20,
        max_steps=5,
        max_output_tokens=500,
        model="archivist",
        policy=Policy(window=WINDOW, max_output_tokens=500),
    )
    deps = Deps(store=store, events=RecordingEvents(), provider=provider, tools=builtin_tools())
    turn = 0
    while len(provider.summary_requests) < COMPACTIONS:
        turn += 1
        marker = f"MARKER-{turn} " if turn % 10 == 1 else ""
        tool = "tool please " if turn % 4 == 0 else ""
        await store.append(1, kind="user", content=f"Turn {turn}: {marker}{tool}" + "words " * 150)
        await run_turn(config, deps)
    sizes = [prompt_size(r) for r in provider.summary_requests]
    first, tenth, twentieth = sizes[0], sizes[9], sizes[19]
    boundaries = [e for e in store.entries if e.kind == "boundary"]
    print(
        f"window {WINDOW} tokens, trigger {config.policy.trigger_tokens}; {turn} turns, "  # type: ignore[union-attr]
        f"{len(store.entries)} entries, {len(boundaries)} boundaries"
    )
    print(f"compaction input tokens: 1st {first}, 10th {tenth}, 20th {twentieth}")
    print(f"ratio 20th/1st: {twentieth / first:.2f} (aim ≤ 1.1)")
    print(f"summary size at the 20th: {len(boundaries[-1].content) // 4} tokens")


if __name__ == "__main__":
    asyncio.run(main())
