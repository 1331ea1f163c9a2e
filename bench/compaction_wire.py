"""Compaction through HTTP against a provider that counts 3× chars/4, on an 8,000-token window.

A real stack (daphne, a throwaway database) and the scripted OpenAI-compatible server in
counting mode (tests/contract/scripted_openai_server.py): it counts every prompt from the
request body by its own rule, reports that as usage, and refuses a prompt over its limit.
N turns (argv[1] or HORSIE_BENCH_TURNS, default 400) of prose, CSV and code, each posted
with `?wait=`. Prints the median turn time of turns 1-10 and of the last 10 and their ratio
(aim ≤ 1.3), compactions per 100 turns, refusals, and for each boundary the prompt the
server counted on the next call against the planned size (`tokens_after`). Asserts nothing.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from _setup import ROOT, median

sys.path.insert(0, str(ROOT))

from tests.support.stack import Stack  # noqa: E402

WINDOW = 8_000
DENSITY = 3.0
REPLY = {"text": "Noted: the figures add up and nothing is out of the ordinary today."}


def prose(n: int) -> str:
    return (
        f"Note {n}: the morning shift moved the heavy crates to the east dock before the trucks "
        "arrived, and the scales were checked twice against the reference weight. "
    ) * 4


def csv(n: int) -> str:
    return "\n".join(
        f"2026-05-01,14:{i // 60 % 60:02d}:{i % 60:02d},station {i % 8},"
        f"crate {4400 + n * 30 + i},{400 + i * 1.5:.1f} kg,ok"
        for i in range(30)
    )


def code(n: int) -> str:
    return (
        f"Why does this fail on turn {n}?\n"
        f"def total_weight_{n}(rows):\n"
        "    total = 0.0\n"
        "    for row in rows:\n"
        "        date, time, station, crate, weight, status = row.split(',')\n"
        "        if status.strip() != 'ok':\n"
        "            continue\n"
        "        total += float(weight.removesuffix(' kg'))\n"
        "    return {'total': total, 'rows': len(rows), 'mean': total / len(rows)}\n"
    ) * 2


def message(n: int) -> str:
    return (prose, csv, code)[n % 3](n)


def entries_of(stack: Stack, session: int) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    after = 0
    while True:
        _, page = stack.api("GET", f"/sessions/{session}/entries?after={after}&limit=500")
        entries += page["entries"]
        if not page["has_more"]:
            return entries
        after = entries[-1]["seq"]


def main() -> None:
    args = sys.argv[1:]
    turns = int(args[0]) if args else int(os.environ.get("HORSIE_BENCH_TURNS", "400"))
    stack = Stack(extra_env={"HORSIE_DISPATCH": "inprocess"})
    try:
        stack.start_web(quiet=True)
        model = stack.scripted_model({"density": DENSITY, "limit": WINDOW, "reply": REPLY})
        status, card = stack.api(
            "POST",
            "/models",
            {
                "name": "counting",
                "wire": "openai_chat",
                "model": "scripted",
                "base_url": model.base_url,
                "context_window": WINDOW,
                "max_output_tokens": 500,
            },
        )
        assert status == 201, card
        status, created = stack.api("POST", "/sessions", {"model": card["id"]})
        assert status == 201, created
        session = int(created["id"])
        times: list[float] = []
        unanswered = 0
        for n in range(1, turns + 1):
            started = time.perf_counter()
            status, done = stack.api(
                "POST", f"/sessions/{session}/messages?wait=60", {"text": message(n)}
            )
            times.append(time.perf_counter() - started)
            if status != 200 or not any(e["kind"] == "assistant" for e in done["entries"]):
                unanswered += 1
        report(stack, session, model.counts(), times, unanswered)
    finally:
        stack.close()


def report(
    stack: Stack, session: int, counts: list[dict[str, Any]], times: list[float], unanswered: int
) -> None:
    turns = len(times)
    entries = entries_of(stack, session)
    boundaries = [e for e in entries if e["kind"] == "boundary"]
    notices: dict[str, int] = {}
    for entry in entries:
        if entry["kind"] == "notice":
            code_ = str(entry["data"].get("code"))
            notices[code_] = notices.get(code_, 0) + 1
    early, late = median(times[:10]), median(times[-10:])
    print(f"{turns} turns through HTTP, window {WINDOW}, server counting {DENSITY}× chars/4")
    print(f"turn time, median of turns 1-10:       {early * 1000:8.1f} ms")
    print(f"turn time, median of the last 10:      {late * 1000:8.1f} ms")
    print(f"ratio last/first:                      {late / early:8.2f}  (aim ≤ 1.3)")
    print(f"compactions: {len(boundaries)}, per 100 turns {100 * len(boundaries) / turns:.1f}")
    print(f"requests {len(counts)}, refused {sum(c['refused'] for c in counts)}, "
          f"turns unanswered {unanswered}, notices {notices or 'none'}")  # fmt: skip
    after = next_prompts(counts)
    ratios: list[float] = []
    print("boundary  seq  tokens_before  planned(tokens_after)  server counted next  ratio")
    for index, (boundary, counted) in enumerate(zip(boundaries, after, strict=False)):
        planned = boundary["data"].get("tokens_after") or 0
        before = boundary["data"].get("tokens_before")
        ratio = counted / planned if planned else float("nan")
        ratios.append(ratio)
        print(f"{index + 1:8d} {boundary['seq']:5d} {before!s:>14} {planned:21d} "
              f"{counted:20d}  {ratio:.2f}")  # fmt: skip
    if ratios:
        print(f"median counted/planned: {median(ratios):.2f} over {len(ratios)} boundaries")


def next_prompts(counts: list[dict[str, Any]]) -> list[int]:
    """The prompt the server counted on the first ordinary call after each summary call."""
    after: list[int] = []
    waiting = False
    for count in counts:
        if count["refused"]:
            continue
        if count["summary"]:
            waiting = True
        elif waiting:
            after.append(count["prompt_tokens"])
            waiting = False
    return after


if __name__ == "__main__":
    main()
