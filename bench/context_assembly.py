"""Context assembly at 1,000 vs 100,000 entries: time and rows read (aims: ratio ≤ 1.3,
rows independent of log length).

Each session's log is bulk-written: turns of user, assistant (some with a tool call) and
tool_result, with a compaction boundary every 500 entries whose cut keeps the last 60. The
timed call is what runs before every model call: `context_entries_now` (the latest
boundary and the entries from its cut) plus `assemble`. SQLite by default; a fresh
PostgreSQL database when DATABASE_URL names one.
"""

from __future__ import annotations

import time

from _setup import django_here, median

SIZES = (1_000, 100_000)
RUNS = 30
EVERY = 500
KEEP = 60


def build(session_id: int, size: int) -> None:
    from sessions_app.models import Entry, Session

    rows: list[Entry] = []
    boundary_seq = 0
    for seq in range(1, size + 1):
        if seq % EVERY == 0:
            data = {
                "first_kept_seq": seq - KEEP,
                "trigger": "auto",
                "carried": {
                    "tasks": [{"text": "keep going", "status": "in_progress"}],
                    "timers": [],
                    "questions": [],
                    "subagents": [],
                    "loaded_skills": [],
                },
            }
            rows.append(
                Entry(
                    session_id=session_id,
                    seq=seq,
                    kind="boundary",
                    content="Summary so far. " * 40,
                    data=data,
                )
            )
            boundary_seq = seq
            continue
        rows.append(entry_at(session_id, seq))
        if len(rows) >= 5_000:
            Entry.objects.bulk_create(rows)
            rows = []
    Entry.objects.bulk_create(rows)
    Session.objects.filter(pk=session_id).update(last_seq=size)
    assert boundary_seq


def entry_at(session_id: int, seq: int):
    from sessions_app.models import Entry

    match seq % 4:
        case 1:
            return Entry(session_id=session_id, seq=seq, kind="user", content="Please go on. " * 20)
        case 2:
            call = {"id": f"c{seq}", "name": "todo_write", "arguments": '{"tasks": []}'}
            return Entry(
                session_id=session_id,
                seq=seq,
                kind="assistant",
                content="On it.",
                data={"tool_calls": [call], "usage": {"input_tokens": 3000}},
            )
        case 3:
            return Entry(
                session_id=session_id,
                seq=seq,
                kind="tool_result",
                content="ok " * 100,
                data={"call_id": f"c{seq - 1}", "name": "todo_write", "is_error": False},
            )
        case _:
            return Entry(
                session_id=session_id,
                seq=seq,
                kind="assistant",
                content="Done. " * 30,
                data={"usage": {"input_tokens": 3000}},
            )


def main() -> None:
    django_here(postgres=True)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from harness.context import assemble
    from horsie_site import wiring
    from sessions_app.selectors import context_entries_now
    from sessions_app.services import session_create
    from teams_app.services import member_ensure

    user, team = member_ensure(username="bench", team_name="bench")
    results = {}
    for size in SIZES:
        session = session_create(user=user, team=team, fields={"title": f"{size}"})
        started = time.perf_counter()
        build(session.pk, size)
        built = time.perf_counter() - started
        tools = [t.spec for t in wiring.tools_for(session).values()]
        times = []
        for _ in range(RUNS):
            t0 = time.perf_counter()
            entries = context_entries_now(session.pk)
            context = assemble(system_prompt=session.system_prompt, tools=tools, entries=entries)
            times.append(time.perf_counter() - t0)
        with CaptureQueriesContext(connection) as queries:
            rows = len(context_entries_now(session.pk))
        results[size] = median(times)
        print(
            f"{size:>7} entries (built in {built:.1f} s): median {median(times) * 1000:.2f} ms, "
            f"{rows} rows read in {len(queries)} queries, {len(context.messages)} messages, "
            f"{context.tokens} tokens"
        )
    small, large = SIZES
    print(
        f"ratio {large // 1000}k/{small // 1000}k: {results[large] / results[small]:.2f} (aim ≤ 1.3)"
    )
    print(f"database: {connection.vendor}")


if __name__ == "__main__":
    main()
