"""Shared start for benchmarks that run Django in-process on a throwaway database.

The database is a SQLite file in a temporary folder; a benchmark that asks for it
(`django_here(postgres=True)`) gets a fresh PostgreSQL database instead when `DATABASE_URL`
names a PostgreSQL server, dropped again when the benchmark exits.
"""

from __future__ import annotations

import atexit
import os
import secrets
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parents[1]


def django_here(*, postgres: bool = False) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ["HORSIE_VAR_DIR"] = tempfile.mkdtemp(prefix="horsie-bench-")
    server = os.environ.pop("DATABASE_URL", None)
    if postgres and server and server.startswith("postgres"):
        os.environ["DATABASE_URL"] = fresh_postgres(server)
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "horsie_site.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def fresh_postgres(server: str) -> str:
    """A new database on the server `server` names, dropped at exit; its URL."""
    import psycopg

    name = f"horsie_bench_{secrets.token_hex(4)}"
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        from django.db import connections

        connections.close_all()
        with psycopg.connect(server, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    atexit.register(drop)
    return urlunparse(urlparse(server)._replace(path=f"/{name}"))
