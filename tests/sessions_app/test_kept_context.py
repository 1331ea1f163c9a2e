"""The context at the end of the log is read on from the last read: one query for what was
appended since, the same entries a whole read gives, read whole again after a boundary, and
never mixed with another log that reuses the session's id."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app.models import Entry
from sessions_app.selectors import context_entries_now, context_rows, kept_context, row_entry
from sessions_app.services import entry_append

pytestmark = pytest.mark.django_db(transaction=True)


def whole(session_id):
    return [row_entry(row) for row in context_rows(session_id)]


def turn(session_id, n, **extra):
    entry_append(session_id=session_id, kind="user", content=f"question {n}")
    entry_append(session_id=session_id, kind="notice", content="not in context", data={"code": "x"})
    entry_append(session_id=session_id, kind="assistant", content=f"answer {n}", **extra)


def test_read_on_gives_what_a_whole_read_gives_for_one_query(session):
    turn(session.pk, 1)
    assert context_entries_now(session.pk) == whole(session.pk)
    for n in range(2, 5):
        turn(session.pk, n)
        with CaptureQueriesContext(connection) as queries:
            entries = context_entries_now(session.pk)
        assert len(queries) == 1, [q["sql"] for q in queries]
        assert entries == whole(session.pk)
        assert [e.kind for e in entries[-2:]] == ["user", "assistant"]
    with CaptureQueriesContext(connection) as queries:
        entries = context_entries_now(session.pk)  # nothing new
    assert len(queries) == 1 and entries == whole(session.pk)


def test_a_boundary_reads_the_context_whole_again(session):
    for n in range(1, 4):
        turn(session.pk, n)
    context_entries_now(session.pk)
    entry_append(
        session_id=session.pk, kind="boundary", content="summary",
        data={"first_kept_seq": 7, "trigger": "manual"},
    )  # fmt: skip
    turn(session.pk, 4)
    entries = context_entries_now(session.pk)
    assert entries == whole(session.pk)
    assert [e.seq for e in entries] == [7, 9, 10, 11, 13]  # the kept tail, the boundary, then on


def test_another_log_under_the_same_id_starts_afresh(session):
    for n in range(1, 3):
        turn(session.pk, n)
    context_entries_now(session.pk)
    # As if the id now named a session of another database: same seqs, other rows.
    Entry.objects.filter(session=session).delete()
    session.last_seq = 0
    session.save(update_fields=["last_seq"])
    for n in range(7, 9):
        turn(session.pk, n)
    entries = context_entries_now(session.pk)
    assert [e.content for e in entries] == ["question 7", "answer 7", "question 8", "answer 8"]


def test_what_a_caller_does_to_its_list_is_not_kept(session):
    turn(session.pk, 1)
    context_entries_now(session.pk).clear()
    assert len(context_entries_now(session.pk)) == 2
    assert kept_context(session.pk).last is not None


def test_the_past_is_read_whole_and_not_kept(session):
    for n in range(1, 4):
        turn(session.pk, n)
    context_entries_now(session.pk)
    assert [e.seq for e in context_entries_now(session.pk, upto=4)] == [1, 3, 4]
    assert context_entries_now(session.pk) == whole(session.pk)


def test_the_state_is_read_on_too_and_equals_a_whole_read(session):
    from sessions_app.journal import state_load, state_now

    def todo(n):
        tasks = json.dumps({"tasks": [{"text": f"task {n}", "status": "pending"}]})
        call = {"id": f"c{n}", "name": "todo_write", "arguments": tasks}
        entry_append(session_id=session.pk, kind="assistant", data={"tool_calls": [call]})
        entry_append(session_id=session.pk, kind="tool_result", content="ok",
                     data={"call_id": f"c{n}", "name": "todo_write", "is_error": False})  # fmt: skip

    todo(1)
    assert state_now(session.pk) == state_load(session.pk)[0]
    for n in range(2, 5):
        todo(n)
        with CaptureQueriesContext(connection) as queries:
            state = state_now(session.pk)
        assert len(queries) == 1
        assert state == state_load(session.pk)[0] and state.seq == 2 * n
        assert [t.text for t in state.tasks] == [f"task {n}"]
    Entry.objects.filter(session=session).delete()  # the id now names another log
    session.last_seq = 0
    session.save(update_fields=["last_seq"])
    turn(session.pk, 1)
    assert state_now(session.pk) == state_load(session.pk)[0]


def test_a_session_made_here_is_read_on_from_its_empty_log_whatever_log_it_meets(session):
    from sessions_app.journal import state_load, state_now
    from sessions_app.services import log_started_empty

    # `session_create` started it empty: the first reads are one query each.
    turn(session.pk, 1)
    with CaptureQueriesContext(connection) as queries:
        entries, state = context_entries_now(session.pk), state_now(session.pk)
    assert len(queries) == 2, [q["sql"] for q in queries]
    assert entries == whole(session.pk) and state == state_load(session.pk)[0]
    # Told empty, but the id names a log with a boundary (another database, a rollback):
    # read on from seq 1, the boundary is met and the context is read whole.
    entry_append(
        session_id=session.pk, kind="boundary", content="summary",
        data={"first_kept_seq": 3, "trigger": "manual"},
    )  # fmt: skip
    turn(session.pk, 2)
    log_started_empty(session.pk)
    assert context_entries_now(session.pk) == whole(session.pk)
    assert [e.seq for e in context_entries_now(session.pk)] == [3, 4, 5, 7]
    assert state_now(session.pk) == state_load(session.pk)[0]
    turn(session.pk, 3)  # and on from there as usual
    assert context_entries_now(session.pk) == whole(session.pk)
    assert state_now(session.pk) == state_load(session.pk)[0]
