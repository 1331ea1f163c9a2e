"""SQLite's connections per process (`horsie_site.sqlite`): a request thread takes the one the
last thread gave back, and only a clean connection is given back."""

from __future__ import annotations

import threading

import pytest
from django.db import DatabaseError
from django.db.utils import ConnectionHandler

ENGINE = "horsie_site.sqlite"


@pytest.fixture
def handler(tmp_path, django_db_blocker):
    """Connections to files of this test's own, apart from the test database."""

    def made(name: str = "pool.sqlite3", size: int = 2) -> ConnectionHandler:
        return ConnectionHandler(
            {
                "default": {
                    "ENGINE": ENGINE,
                    "NAME": str(tmp_path / name),
                    "CONN_MAX_AGE": 0,
                    "OPTIONS": {"pool_size": size},
                }
            }  # fmt: skip
        )

    with django_db_blocker.unblock():
        yield made


def on_a_thread(work):
    """`work()` on a thread of its own, as ASGI runs each request's sync code."""
    out: list = []
    thread = threading.Thread(target=lambda: out.append(work()))
    thread.start()
    thread.join(timeout=30)
    return out[0]


def used(connections: ConnectionHandler, work=None) -> object:
    """The raw connection `work` (else a SELECT 1) ran on, after Django closed it."""
    connection = connections["default"]
    if work is None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    else:
        work(connection)
    raw = connection.connection
    connection.close()
    return raw


def test_a_thread_takes_the_connection_the_last_one_gave_back(handler):
    connections = handler()
    first = on_a_thread(lambda: used(connections))
    second = on_a_thread(lambda: used(connections))
    assert first is second


def test_a_connection_left_in_a_transaction_is_closed_not_pooled(handler):
    connections = handler()

    def left_open(connection) -> None:
        with connection.cursor() as cursor:
            cursor.execute("CREATE TABLE t (x)")
        connection.set_autocommit(False)
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO t VALUES (1)")  # begins a transaction, left open

    first = on_a_thread(lambda: used(connections, left_open))
    assert on_a_thread(lambda: used(connections)) is not first


def test_a_connection_after_an_error_is_closed_not_pooled(handler):
    connections = handler()

    def failed(connection) -> None:
        with pytest.raises(DatabaseError), connection.cursor() as cursor:
            cursor.execute("SELECT * FROM no_such_table")

    first = on_a_thread(lambda: used(connections, failed))
    assert on_a_thread(lambda: used(connections)) is not first


def test_another_database_file_never_gets_the_connection(handler):
    first = on_a_thread(lambda: used(handler("one.sqlite3")))
    assert on_a_thread(lambda: used(handler("two.sqlite3"))) is not first


def test_the_pool_keeps_at_most_its_size(handler):
    connections = handler(size=1)
    barrier = threading.Barrier(2)

    def held() -> object:
        connection = connections["default"]
        connection.ensure_connection()
        barrier.wait(timeout=30)  # both threads hold a connection at once
        raw = connection.connection
        connection.close()
        return raw

    out: list = []
    threads = [threading.Thread(target=lambda: out.append(held())) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert out[0] is not out[1]
    assert on_a_thread(lambda: used(connections)) in out  # one came back, one was closed


def test_pool_size_zero_opens_anew_every_time(handler):
    connections = handler(size=0)
    first = on_a_thread(lambda: used(connections))
    assert on_a_thread(lambda: used(connections)) is not first


def test_a_statement_is_converted_once_and_as_django_converts_it(handler):
    from django.db.backends.sqlite3.base import SQLiteCursorWrapper

    from horsie_site.sqlite import base

    connection = handler()["default"]
    statement = "SELECT %s, '100%%', %s || 'x' WHERE %s = %s"
    base.qmark.cache_clear()
    with connection.cursor() as cursor:
        for _ in range(3):
            cursor.execute(statement, [1, "a", 2, 2])
            assert cursor.fetchone() == (1, "100%", "ax")
        cursor.execute("SELECT %(one)s + %(two)s", {"one": 1, "two": 2})  # pyformat: as Django's
        assert cursor.fetchone() == (3,)
    assert base.qmark.cache_info().misses == 1 and base.qmark.cache_info().hits == 2
    expected = SQLiteCursorWrapper.convert_query(None, statement)
    assert base.qmark(statement) == expected == "SELECT ?, '100%', ? || 'x' WHERE ? = ?"
    connection.close()
