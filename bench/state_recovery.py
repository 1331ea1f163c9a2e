"""Recovering a session's state: `state_load` at 1,000, 10,000 and 100,000 entries.

Each session's log is a realistic mix (messages, replies, tool calls with their results,
task lists, timers armed and fired, the odd failed call and notice), bulk-inserted a
`SNAPSHOT_EVERY` at a time with a snapshot written after each batch, where the app writes
them. `state_load` is timed twice per size (median of 20): at a snapshot (nothing to replay)
and `SNAPSHOT_EVERY - 1` entries past one (the most it ever replays). A full fold of the
whole log is timed beside it. The promise: recovery costs the same at entry 100,000 as at
entry 1,000 (aim: ratio 100k/1k at most 1.5). SQLite by default; PostgreSQL (a fresh
database) when `DATABASE_URL` is set.
"""

from __future__ import annotations

import itertools
import json
import random
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from _setup import django_here, median

SIZES = (1_000, 10_000, 100_000)
RUNS = 20
FOLD_RUNS = 3
AIM = 1.5
Row = tuple[str, str, dict[str, Any], int | None]
WORDS = ("the", "of", "context", "memory", "turn", "model", "summary", "tool", "result", "note")


def prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choices(WORDS, k=words)).capitalize() + "."


def assistant(rng: random.Random, text: str, calls: list[dict[str, str]]) -> Row:
    prompt = rng.randint(2_000, 60_000)
    data = {
        "tool_calls": calls,
        "model": "gpt-bench",
        "prompt_tokens_estimate": prompt,
        "usage": {"input_tokens": prompt, "output_tokens": 120, "cached_tokens": prompt // 2},
        "finish_reason": "tool_calls" if calls else "stop",
    }
    return "assistant", text, data, 120


def tool_step(rng: random.Random, n: int, name: str, arguments: dict[str, Any]) -> Row:
    """The assistant's call; its result follows from `tool_result`."""
    call = {"id": f"call_{n}_{name}", "name": name, "arguments": json.dumps(arguments)}
    return assistant(rng, prose(rng, 12), [call])


def tool_result(n: int, name: str, text: str, **data: Any) -> Row:
    return "tool_result", text, {"call_id": f"call_{n}_{name}", "name": name, **data}, None


def todo_turn(rng: random.Random, n: int) -> Iterator[Row]:
    tasks = [
        {"text": prose(rng, 6), "status": rng.choice(["pending", "in_progress", "done"])}
        for _ in range(rng.randint(2, 8))
    ]
    yield tool_step(rng, n, "todo_write", {"tasks": tasks})
    lines = "\n".join(f"[{t['status']}] {t['text']}" for t in tasks)
    yield tool_result(n, "todo_write", "Task list updated:\n" + lines, is_error=False)


def timer_turn(rng: random.Random, n: int, armed: list[str]) -> Iterator[Row]:
    seconds = rng.randint(60, 3_600)
    yield tool_step(rng, n, "set_timer", {"seconds": seconds, "message": prose(rng, 6)})
    due = (datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=n)).isoformat()
    timer = {"id": f"t-{n:08x}", "message": prose(rng, 6), "seconds": seconds, "due_at": due}
    armed.append(timer["id"])
    text = f"Timer {timer['id']} armed; it fires at {due}."
    yield tool_result(n, "set_timer", text, is_error=False, timer=timer)


def failed_turn(rng: random.Random, n: int) -> Iterator[Row]:
    yield tool_step(rng, n, "cancel_timer", {"id": "t-nope"})
    yield tool_result(n, "cancel_timer", "No armed timer 't-nope'.", is_error=True)
    yield "notice", "The model call failed: rate limited.", {"code": "provider_error"}, None


def log_rows(seed: int = 7) -> Iterator[Row]:
    """An endless log, turn after turn; armed timers fire a few turns later."""
    rng = random.Random(seed)
    armed: list[str] = []
    for n in itertools.count(1):
        if armed and n % 6 == 0:
            timer = armed.pop(0)
            yield "timer", prose(rng, 6), {"timer": timer, "due_at": "2026-01-01T00:00:00+00:00"}, 0
        else:
            yield "user", prose(rng, rng.randint(10, 60)), {}, None
        pick = rng.random()
        if pick < 0.35:
            yield from todo_turn(rng, n)
        elif pick < 0.5:
            yield from timer_turn(rng, n, armed)
        elif pick < 0.55:
            yield from failed_turn(rng, n)
        yield assistant(rng, prose(rng, rng.randint(40, 150)), [])


class Builder:
    """Appends rows to one session's log as the app would: a snapshot every K entries."""

    def __init__(self, session_id: int) -> None:
        self.session_id = session_id
        self.rows = log_rows()
        self.seq = 0

    def grow(self, count: int) -> None:
        from django.db import transaction

        from sessions_app.journal import snapshot_every, snapshot_write
        from sessions_app.models import Entry, Session

        every = snapshot_every()
        with transaction.atomic():
            while count:
                batch = min(count, every - self.seq % every)
                entries = [
                    Entry(
                        session_id=self.session_id,
                        seq=self.seq + i,
                        kind=kind,
                        content=content,
                        data=data,
                        tokens=tokens,
                    )
                    for i, (kind, content, data, tokens) in enumerate(
                        itertools.islice(self.rows, batch), 1
                    )
                ]
                Entry.objects.bulk_create(entries, batch_size=500)
                self.seq += batch
                count -= batch
                Session.objects.filter(pk=self.session_id).update(last_seq=self.seq)
                if self.seq % every == 0:
                    snapshot_write(self.session_id)


def full_fold(session_id: int) -> Any:
    from harness.messages import LogEntry
    from harness.state import fold
    from sessions_app.models import Entry

    rows = (
        Entry.objects.filter(session_id=session_id)
        .order_by("seq")
        .values_list("seq", "kind", "data")
    )
    return fold(LogEntry(seq=s, kind=k, data=d) for s, k, d in rows.iterator())


def timed(function: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return median(times)


def measure(session_id: int, fold_runs: int) -> tuple[int, int, float, float]:
    """(entries, replayed, state_load median, full fold median), after checking they agree."""
    from sessions_app.journal import state_load

    state, snapshot_seq = state_load(session_id)
    assert state == full_fold(session_id), "the snapshot + replay differs from the full fold"
    load = timed(lambda: state_load(session_id), RUNS)
    whole = timed(lambda: full_fold(session_id), fold_runs)
    return state.seq, state.seq - (snapshot_seq or 0), load, whole


def main() -> None:
    django_here(postgres=True)
    from django.db import connection

    from sessions_app.journal import snapshot_every
    from sessions_app.services import session_create
    from teams_app.services import member_ensure

    every = snapshot_every()
    user, team = member_ensure(username="bench", team_name="bench")
    print(
        f"state_load on {connection.vendor}, SNAPSHOT_EVERY={every}, "
        f"median of {RUNS} (full fold: median of {FOLD_RUNS})"
    )
    print(f"{'entries':>9} {'replayed':>9} {'state_load':>12} {'full fold':>12}  (build)")
    results: dict[tuple[int, bool], tuple[int, int, float, float]] = {}
    for size in SIZES:
        session = session_create(user=user, team=team, fields={"title": f"{size} entries"})
        builder = Builder(session.pk)
        started = time.perf_counter()
        builder.grow(size)
        build = time.perf_counter() - started
        for tail in (False, True):
            if tail:
                builder.grow(every - 1)
            results[size, tail] = row = measure(session.pk, FOLD_RUNS)
            entries, replayed, load, whole = row
            print(
                f"{entries:>9,} {replayed:>9,} {load * 1000:>9.2f} ms {whole * 1000:>9.1f} ms"
                + (f"  ({build:.1f} s)" if not tail else "")
            )
    for tail, what in ((False, "at a snapshot"), (True, f"{every - 1} entries past one")):
        ratio = results[SIZES[-1], tail][2] / results[SIZES[0], tail][2]
        verdict = "ok" if ratio <= AIM else f"MISSES the aim of {AIM}"
        print(f"ratio state_load 100k/1k, {what}: {ratio:.2f} ({verdict})")
    fold_ratio = results[SIZES[-1], True][3] / results[SIZES[0], True][3]
    print(f"ratio full fold 100k/1k: {fold_ratio:.1f}")


if __name__ == "__main__":
    main()
