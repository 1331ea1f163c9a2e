"""What a model call costs to prepare as the log grows: turn 10 against turn 1,000.

A session on a 128k-window openai_chat card is given the log of N turns (a user message of 200
characters and a reply, every fifth turn a tool call and its result, as bench/side_by_side.py
sends), then each timed call appends one more turn's user message and prepares the next
request the way a turn does: the context entries from the database (`context_entries_now`,
read on from the last read), the session view with the session's kept entries and a
calibration that moves on every call (as every reported call moves it), and the wire's
encoded body. CPU ms of this thread, median of 40, at N = 10 and N = 1,000, and their ratio
(aim ≤ 1.3). `--profile` prints where the N = 1,000 calls spend it. Asserts nothing.
"""

from __future__ import annotations

import cProfile
import pstats
import statistics
import sys
import time

from _setup import django_here

SIZES = (10, 1_000)
RUNS = 40
FILLER = "the crates on the east dock were weighed twice and the numbers agree. "


def turn_rows(session_id: int, turn: int, seq: int) -> list:
    from sessions_app.models import Entry

    text = (f"Turn {turn}: " + FILLER * 4)[:200]
    rows = [Entry(session_id=session_id, seq=seq, kind="user", content=text)]
    usage = {"input_tokens": 1000 + turn * 90, "output_tokens": 16}
    if turn % 5 == 0:
        call = {"id": f"call_{turn}", "name": "read_entry", "arguments": '{"seq": 1}'}
        rows.append(Entry(session_id=session_id, seq=seq + 1, kind="assistant", content="",
                          data={"tool_calls": [call], "usage": usage}))  # fmt: skip
        rows.append(Entry(session_id=session_id, seq=seq + 2, kind="tool_result", content=text,
                          data={"call_id": f"call_{turn}", "name": "read_entry",
                                "is_error": False}))  # fmt: skip
    reply = "Noted: the figures add up and nothing is out of the ordinary today."
    rows.append(Entry(session_id=session_id, seq=seq + len(rows), kind="assistant", content=reply,
                      data={"tool_calls": [], "usage": usage}))  # fmt: skip
    return rows


def main() -> None:
    django_here(postgres=True)
    from harness.runtime import Deps, read_view
    from horsie_site import wiring
    from sessions_app.models import Entry, ModelCard, Session
    from sessions_app.services import entry_append, session_create
    from sessions_app.stores import OrmTranscriptStore
    from teams_app.services import member_ensure

    user, team = member_ensure(username="bench", team_name="bench")
    card = ModelCard.objects.create(team=team, name="mock", wire="openai_chat", model="mock",
                                    base_url="http://127.0.0.1:9/v1", context_window=128_000,
                                    max_output_tokens=1000)  # fmt: skip
    profile = cProfile.Profile() if "--profile" in sys.argv[1:] else None
    results: dict[int, float] = {}
    for size in SIZES:
        session = session_create(user=user, team=team, fields={"model": card})
        rows, seq = [], 1
        for turn in range(1, size + 1):
            rows += turn_rows(session.pk, turn, seq)
            seq = rows[-1].seq + 1
        Entry.objects.bulk_create(rows)
        Session.objects.filter(pk=session.pk).update(last_seq=seq - 1)
        config = wiring.turn_config(session)
        provider = wiring.provider_for(card)
        deps = Deps(store=OrmTranscriptStore("bench"), events=None, provider=provider,  # type: ignore[arg-type]
                    tools=wiring.tools_for(session))  # fmt: skip
        spent = []
        for run in range(RUNS + 3):
            entry_append(session_id=session.pk, kind="user", content=f"one more, {run}")
            began = time.thread_time()
            if profile and size == SIZES[-1] and run >= 3:
                profile.enable()
            view = asyncio_run(read_view(config, deps, recalibrated(run)))
            body = provider.encoded(view.context.request(config.max_output_tokens))
            if profile:
                profile.disable()
            spent.append(time.thread_time() - began)
        results[size] = statistics.median(spent[3:]) * 1000
        print(f"N = {size:5,}: {len(view.entries):5,} entries in context, ~{len(body) // 4:7,} "
              f"tokens sent, {results[size]:6.2f} ms a call")  # fmt: skip
    print(f"N = {SIZES[-1]:,} / N = {SIZES[0]}: {results[SIZES[-1]] / results[SIZES[0]]:.2f}")
    if profile:
        pstats.Stats(profile).sort_stats("tottime").print_stats(18)


def recalibrated(run: int):
    from harness.state import SessionState

    return SessionState(calibration=1.0 + run / 1000, calibrated_on=run + 1)


def asyncio_run(coroutine):
    import asyncio

    return asyncio.new_event_loop().run_until_complete(coroutine)


if __name__ == "__main__":
    main()
