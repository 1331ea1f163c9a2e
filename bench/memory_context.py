"""Memory in context: what 0, 1 and 10 selected spaces of 200 notes each add to the
context built before every model call (aim: memory adds under 2 ms), and the tokens each
space adds against its budget.

Three figures per case, median of RUNS: `memory` is what memory adds before a call (the
selected spaces and their notes read, as the turn reads them, then rendered); `render` is
the core's part of it alone (budgets, hot rules, named truncation); `view` is the whole
`session_view` the turn and the page use (session, state, entries, memory, assembly). SQLite by default; a fresh PostgreSQL database
when DATABASE_URL names one.
"""

from __future__ import annotations

import time

from _setup import django_here, median

RUNS = 30
NOTES = 200
BUDGET = 2_000


def spaces_for(team, user, count: int) -> list:
    from memory_app.models import MemoryNote, MemorySpace

    spaces = []
    for n in range(count):
        space = MemorySpace.objects.create(
            team=team, name=f"space-{n}", scope="team", budget_tokens=BUDGET
        )
        MemoryNote.objects.bulk_create(
            MemoryNote(
                space=space,
                title=f"note {n}-{i}",
                body=f"Rule {i}: keep module {i} small; measure before optimising. " * 3,
                pinned=i < 5,
                updated_by=user,
            )
            for i in range(NOTES)
        )
        spaces.append(space)
    return spaces


def timed(function, *args):
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        result = function(*args)
        times.append((time.perf_counter() - started) * 1000)
    return median(times), result


def main() -> None:
    django_here(postgres=True)
    from harness.memory import render_memory
    from memory_app.stores import spaces_now
    from sessions_app.services import session_create
    from sessions_app.stores import session_view
    from teams_app.services import member_ensure

    user, team = member_ensure(username="bench", team_name="bench", password="x" * 12)
    all_spaces = spaces_for(team, user, 10)
    print(f"{'spaces':>6} {'view ms':>8} {'memory ms':>10} {'render ms':>10} "
          f"{'memory tokens':>14} {'per space / budget':>19} {'notes left out':>15}")  # fmt: skip
    for count in (0, 1, 10):
        session = session_create(user=user, team=team, fields={"title": f"{count} spaces"})
        session.memory = [{"space": s.pk, "mode": "read"} for s in all_spaces[:count]]
        session.save(update_fields=["memory"])
        view_ms, view = timed(session_view, session)
        memory_ms, _ = timed(
            lambda pk=session.pk, counter=view.counter: render_memory(spaces_now(pk), counter)
        )
        render_ms, block = timed(render_memory, spaces_now(session.pk), view.counter)
        left = sum(len(t.notes) for t in block.truncated)
        per_space = block.costs[0].tokens if block.costs else 0
        print(f"{count:>6} {view_ms:>8.2f} {memory_ms:>10.2f} {render_ms:>10.2f} "
              f"{block.tokens:>14,} {per_space:>10,} / {BUDGET:,} {left:>15,}")  # fmt: skip


if __name__ == "__main__":
    main()
