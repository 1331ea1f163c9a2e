"""Memory in context: what 0, 1 and 10 selected spaces of 200 notes each add to the
context built before every model call (aim: memory adds under 2 ms), and the tokens each
space adds against its budget.

Two figures per case, median of RUNS: `render` is the core alone (`render_memory` over the
spaces already read: budgets, hot rules, named truncation); `view` is the whole
`session_view` the turn and the page use (session, state, entries, the spaces and their
notes read from the database, assembly). SQLite by default; a fresh PostgreSQL database
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
    print(f"{'spaces':>6} {'view ms':>8} {'render ms':>10} {'memory tokens':>14} "
          f"{'per space / budget':>19} {'notes left out':>15}")  # fmt: skip
    base = None
    for count in (0, 1, 10):
        session = session_create(user=user, team=team, fields={"title": f"{count} spaces"})
        session.memory = [{"space": s.pk, "mode": "read"} for s in all_spaces[:count]]
        session.save(update_fields=["memory"])
        view_ms, view = timed(session_view, session)
        spaces = spaces_now(session.pk)
        render_ms, block = timed(render_memory, spaces, view.counter)
        base = view_ms if base is None else base
        left = sum(len(t.notes) for t in block.truncated)
        per_space = block.costs[0].tokens if block.costs else 0
        print(f"{count:>6} {view_ms:>8.2f} {render_ms:>10.2f} {block.tokens:>14,} "
              f"{per_space:>10,} / {BUDGET:,} {left:>15,}")  # fmt: skip
        if count:
            print(f"{'':>6} memory adds {view_ms - base:.2f} ms to the view "
                  f"({(view_ms - base) / count:.2f} ms a space)")  # fmt: skip


if __name__ == "__main__":
    main()
