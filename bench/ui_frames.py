"""What one live update of the session page costs the web process, per watcher.

The UI socket renders each event as the page's own partials. Timed here (median of 20) on
sessions of 200 and 2,000 entries: an entry frame (a user message), a reply's frame (the
entry with the meter, failure banner, memory panel and chart that move with it), a state
frame (questions, tasks, timers), beside the whole page as a browser loads it and beside what
the page before this one did for each reply (three requests: the entry's markdown, the
meter, the chart). The promise: a reply costs each watcher no more than it did (aim: new/old
at most 1.0), a fraction of a page load; the ratios 2,000/200 entries are printed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from _setup import django_here, median

SIZES = (200, 2_000)
RUNS = 20
AIM = 1.0


def timed(work: Callable[[], object]) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return median(times)


def session_of(size: int, user, team, card):
    from sessions_app import services
    from sessions_app.models import Entry

    session = services.session_create(
        user=user, team=team, fields={"title": f"{size} entries", "model": card}
    )
    rows = []
    for seq in range(1, size + 1):
        if seq % 2:
            rows.append(Entry(session=session, seq=seq, kind="user", content=f"Question {seq}"))
        else:
            data = {"usage": {"input_tokens": 1000 + seq, "output_tokens": 40, "cached_tokens": 0}}
            text = f"Answer **{seq}** with a [link](https://example.com/{seq})."
            rows.append(Entry(session=session, seq=seq, kind="assistant", content=text, data=data))
    Entry.objects.bulk_create(rows, batch_size=500)
    session.last_seq = size
    session.save(update_fields=["last_seq"])
    return session


def main() -> None:
    django_here()
    from django.test import Client

    from sessions_app.journal import state_json, state_load
    from sessions_app.models import ModelCard
    from sessions_app.selectors import access_session
    from sessions_app.ui_consumer import Viewer, entries_frame, state_frame
    from teams_app.services import member_ensure

    user, team = member_ensure(username="bench", team_name="bench", password="bench-pass-123")
    card = ModelCard.objects.create(
        team=team, name="Bench", wire="openai_chat", model="m", context_window=128_000
    )
    client = Client()
    client.force_login(user)
    results = {}
    for size in SIZES:
        session = session_of(size, user, team, card)

        def frame(seq: int, sid: int = session.pk) -> None:
            viewer = Viewer(user=user, session_id=sid, csrf_token="", last_seq=seq - 1)
            entries_frame(viewer, access_session(user, sid), seq - 1, 1)

        current = state_json(*state_load(session.pk))

        def state(sid: int = session.pk, current: dict = current) -> None:
            viewer = Viewer(user=user, session_id=sid, csrf_token="")
            state_frame(viewer, access_session(user, sid), current)

        def before(sid: int = session.pk, size: int = size) -> None:
            for path in (f"entries/{size}/", "meter/", "chart/"):
                assert client.get(f"/sessions/{sid}/{path}").status_code == 200

        def page(sid: int = session.pk) -> None:
            assert client.get(f"/sessions/{sid}/").status_code == 200

        results[size] = {
            "entry": timed(lambda size=size: frame(size - 1)),
            "reply": timed(lambda size=size: frame(size)),
            "state": timed(state),
            "page": timed(page),
            "before": timed(before),
        }
        row = results[size]
        print(
            f"{size:>6,} entries: entry frame {row['entry']:.1f} ms · reply frame "
            f"{row['reply']:.1f} ms (before: {row['before']:.1f} ms, new/old "
            f"{row['reply'] / row['before']:.2f}) · state frame {row['state']:.1f} ms · page "
            f"{row['page']:.1f} ms"
        )
    small, large = results[SIZES[0]], results[SIZES[-1]]
    print(
        f"reply frame {SIZES[-1]:,}/{SIZES[0]:,} entries: {large['reply'] / small['reply']:.2f}; "
        f"entry frame: {large['entry'] / small['entry']:.2f}"
    )
    worst = max(r["reply"] / r["before"] for r in results.values())
    print(f"worst reply new/old {worst:.2f} (aim at most {AIM})")


if __name__ == "__main__":
    main()
