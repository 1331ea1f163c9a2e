"""Harness overhead per turn: a zero-latency scripted model, one session, 1,020 turns.

Each turn is timed from the user entry's append to the lease's release: context assembly,
the model call (instant), the assistant entry, and the turn boundary, on the embedded
SQLite database. Prints the median of turns 10-30 and of turns 1,000-1,020, and their ratio.
"""

from __future__ import annotations

import asyncio
import time

from _setup import django_here, median

TURNS = 1020


def main() -> None:
    django_here()
    from harness.testing import ScriptedProvider, reply
    from horsie_site import wiring
    from sessions_app.leases import lease_take
    from sessions_app.services import entry_append, session_create
    from sessions_app.threads import db
    from sessions_app.worker import drive_session
    from teams_app.services import member_ensure

    provider = ScriptedProvider(default=reply("An answer of a few words."))
    wiring.provider_for = lambda card: provider
    user, team = member_ensure(username="bench", team_name="bench")
    session = session_create(user=user, team=team, fields={"title": "overhead"})

    async def one_turn(n: int) -> float:
        started = time.perf_counter()
        await db(entry_append)(session_id=session.pk, kind="user", content=f"Message {n}.")
        lease = await db(lease_take)(session.pk)
        assert lease is not None
        await drive_session(session.pk, lease)
        return time.perf_counter() - started

    async def run() -> list[float]:
        return [await one_turn(n) for n in range(1, TURNS + 1)]

    times = asyncio.run(run())
    early, late = median(times[9:30]), median(times[999:1020])
    print(f"turn overhead, median of turns 10-30:      {early * 1000:.2f} ms")
    print(f"turn overhead, median of turns 1000-1020:  {late * 1000:.2f} ms")
    print(f"ratio late/early:                          {late / early:.2f}")


if __name__ == "__main__":
    main()
