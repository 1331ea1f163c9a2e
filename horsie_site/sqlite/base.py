"""SQLite with a pool of connections per process, as PostgreSQL has (`DATABASE_POOL_SIZE`).

Under ASGI each request's synchronous code runs on a thread of its own and Django keeps a
connection per thread, so every request opened SQLite anew: connect, register Django's SQL
functions, run the PRAGMAs. That was about 0.8 ms, most of a token-authenticated request's
first query. Here a closed connection goes back to the process's pool and the next thread
takes it from there. Only a clean one goes back (no transaction open, no error since its
last commit or rollback, a file database); anything else is closed for real. The pool is
keyed by the database file a connection was opened on, so a test database never hands out
a connection to another.

Its cursors convert a statement from Django's `%s` style to SQLite's `?` once per distinct
statement, not on every execution: a regular expression over the whole SQL, about 3% of a
turn's CPU, for statements that are the same every time.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from typing import Any

from django.db.backends.sqlite3 import base


class Pool:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: dict[str, list[sqlite3.Connection]] = {}

    def take(self, name: str) -> sqlite3.Connection | None:
        with self.lock:
            idle = self.idle.get(name)
            return idle.pop() if idle else None

    def give(self, name: str, connection: sqlite3.Connection, size: int) -> bool:
        with self.lock:
            idle = self.idle.setdefault(name, [])
            if len(idle) >= size:
                return False
            idle.append(connection)
            return True


POOL = Pool()


@functools.lru_cache(maxsize=1024)
def qmark(query: str) -> str:
    return base.SQLiteCursorWrapper.convert_query(None, query)  # type: ignore[arg-type]


class CursorWrapper(base.SQLiteCursorWrapper):
    def convert_query(self, query: str, *, param_names: list[str] | None = None) -> str:
        if param_names is None:
            return qmark(query)
        return super().convert_query(query, param_names=param_names)


class DatabaseWrapper(base.DatabaseWrapper):
    pooled_on: str | None = None

    @property
    def pool_size(self) -> int:
        return int(self.settings_dict.get("OPTIONS", {}).get("pool_size", 0))

    def get_connection_params(self) -> dict[str, Any]:
        params = super().get_connection_params()
        params.pop("pool_size", None)
        return params

    def create_cursor(self, name: str | None = None) -> CursorWrapper:
        return self.connection.cursor(factory=CursorWrapper)  # type: ignore[no-any-return]

    def get_new_connection(self, conn_params: dict[str, Any]) -> sqlite3.Connection:
        name = str(conn_params["database"])
        self.pooled_on = None if self.is_in_memory_db() or not self.pool_size else name
        kept = POOL.take(name) if self.pooled_on else None
        return kept if kept is not None else super().get_new_connection(conn_params)

    def _close(self) -> None:
        connection = self.connection
        clean = (
            self.pooled_on is not None
            and connection is not None
            and not connection.in_transaction
            and not self.in_atomic_block
            and not self.errors_occurred
        )
        if clean and POOL.give(self.pooled_on, connection, self.pool_size):  # type: ignore[arg-type]
            return
        super()._close()
