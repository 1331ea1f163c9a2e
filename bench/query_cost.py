"""What one of a turn's hot queries costs built by the ORM each time, and compiled once.

In-process on a throwaway database (SQLite, or a fresh PostgreSQL one when `DATABASE_URL`
names a server), a session with 40 entries: each query run through its queryset as the code
used to (`list(build(...))`), then through its compiled statement (`horsie_site.compiled`),
interleaved, 300 rounds; CPU µs per call of this thread (the machine may be shared), median,
and the ratio. Both must give the same rows (checked once). Asserts nothing else.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from _setup import django_here, median

django_here(postgres=True)

from sessions_app.journal import state_tail  # noqa: E402
from sessions_app.selectors import context_tail, new_entries, visible_session  # noqa: E402
from sessions_app.services import entry_append, session_create  # noqa: E402
from sessions_app.waiting import status_of  # noqa: E402
from sessions_app.worker import session_with_card  # noqa: E402
from teams_app.models import hash_token  # noqa: E402
from teams_app.selectors import token_with_user  # noqa: E402
from teams_app.services import member_ensure, token_issue  # noqa: E402

ROUNDS = 300


def cpu_us(call: Callable[[], Any]) -> float:
    began = time.thread_time_ns()
    call()
    return (time.thread_time_ns() - began) / 1000


def main() -> None:
    alice, acme = member_ensure(username="alice", team_name="acme", password="alice-pass-123")
    digest = hash_token(token_issue(user=alice))
    session = session_create(user=alice, team=acme, fields={"title": "bench"})
    for n in range(40):
        entry_append(session_id=session.pk, kind="user", content=f"message {n}", data={"n": n})
    cases = [
        ("token and its user", token_with_user, (digest,)),
        ("session access", visible_session, (alice.pk, session.pk)),
        ("runner setup", session_with_card, (session.pk,)),
        ("context read-on", context_tail, (session.pk, 38)),
        ("state read-on", state_tail, (session.pk, 38)),
        ("status", status_of, (session.pk,)),
        ("new entries", new_entries, (session.pk, 38)),
    ]
    print(f"{'query':22}{'ORM µs':>10}{'compiled µs':>13}{'ratio':>8}")
    for name, statement, args in cases:
        assert list(statement.build(*args)) == statement(*args), name
        orm, kept = [], []
        for _ in range(ROUNDS):
            orm.append(cpu_us(lambda s=statement, a=args: list(s.build(*a))))
            kept.append(cpu_us(lambda s=statement, a=args: s(*a)))
        print(f"{name:22}{median(orm):10.0f}{median(kept):13.0f}{median(orm) / median(kept):8.1f}")


if __name__ == "__main__":
    main()
