"""The database work of one turn through HTTP, counted: a message POSTed with `?wait`, the
turn run in-process against the scripted model, the reply read back. Every query on every
thread is counted (the turn runs on its own thread), so a change that adds round trips to
the turn's path fails here and has to say why."""

from __future__ import annotations

import re
import threading
from collections import Counter

import pytest
from django.db.backends import utils

from sessions_app.dispatcher import TurnThread

pytestmark = pytest.mark.django_db(transaction=True)

# Queries of one plain turn (a user message, one model call, the reply) at HTTP, all threads.
TURN_QUERIES = 17  # 41 before the turn path was batched, 28 before state and context were read on,
# 24 before the turn's first state came with its first call's view, 23 before memory and skills
# read the session's selection once, 22 before the release checked the queue in its own statement,
# 20 before the setup read the first call's view and a fresh lease was no longer renewed, 18
# before the page of new entries came with its cut


class Queries:
    """Every SQL statement any thread executes while it is on."""

    def __init__(self, monkeypatch):
        self.statements: list[str] = []
        self.lock = threading.Lock()
        self.on = False
        for name in ("execute", "executemany"):
            original = getattr(utils.CursorWrapper, name)
            monkeypatch.setattr(utils.CursorWrapper, name, self.counted(original))

    def counted(self, original):
        def run(cursor, sql, *args, **kwargs):
            if self.on:
                with self.lock:
                    self.statements.append(str(sql))
            return original(cursor, sql, *args, **kwargs)

        return run

    def by_kind(self) -> Counter[str]:
        return Counter(" ".join(sql.split()[:4])[:60] for sql in self.statements)


@pytest.fixture
def runs(monkeypatch):
    """The in-process runs started, so a test can wait for a run's very end."""
    started = []
    submit = TurnThread.submit
    monkeypatch.setattr(
        TurnThread, "submit", lambda self, work: started.append(submit(self, work)) or started[-1]
    )
    return started


def test_one_turn_through_http_costs_at_most_its_queries(
    api_for, session, scripted, monkeypatch, runs
):
    queries = Queries(monkeypatch)
    api = api_for("alice")
    path = f"/sessions/{session.pk}/messages?wait=30"
    assert api.post(path, {"text": "warm-up turn"}).json()["status"] == "idle"
    runs.pop().result(timeout=30)
    queries.on = True
    answer = api.post(path, {"text": "the counted turn"}).json()
    runs.pop().result(timeout=30)
    queries.on = False
    assert answer["status"] == "idle"
    assert [e["kind"] for e in answer["entries"]] == ["user", "assistant"]
    print("QUERIES", len(queries.statements))
    assert len(queries.statements) <= TURN_QUERIES, queries.by_kind().most_common()


def test_a_new_sessions_first_turn_costs_what_a_later_one_does(
    api_for, session, scripted, monkeypatch, runs
):
    """Made in this process, its log is known empty: its context and state are read on from
    there (one query each), not read whole as an unknown session's are (three more)."""
    queries = Queries(monkeypatch)
    api = api_for("alice")
    path = f"/sessions/{session.pk}/messages?wait=30"
    assert api.get(f"/sessions/{session.pk}").status_code == 200  # the token's first use
    turns = []
    for text in ("the first turn", "the second turn"):
        queries.statements, queries.on = [], True
        answer = api.post(path, {"text": text}).json()
        runs.pop().result(timeout=30)
        queries.on = False
        assert [e["kind"] for e in answer["entries"]] == ["user", "assistant"]
        turns.append(sorted(re.sub(r"\s+", " ", sql) for sql in queries.statements))
    assert turns[0] == turns[1]
    assert len(turns[0]) <= TURN_QUERIES
