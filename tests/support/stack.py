"""A real Horsie stack in child processes, for tests and benchmarks that need one.

`Stack` gives each use a database of its own (a fresh PostgreSQL database when
`DATABASE_URL` points at PostgreSQL, else a SQLite file in a temporary folder), migrates it,
makes alice on team acme with an API token, and starts `daphne` (and, with Redis, turn
workers). `scripted_model` starts the scripted OpenAI-compatible server. Everything started
is stopped by `close()`. Readiness is awaited by polling with a bound, never by a fixed sleep.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SCRIPTED_SERVER = ROOT / "tests" / "contract" / "scripted_openai_server.py"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_manage(env: dict[str, str], *args: str) -> str:
    """`manage.py ARGS` in a child process with `env`; its output, or the test fails."""
    command = [str(BIN / "python"), "manage.py", *args]
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def wait_until(check: Any, seconds: float = 30.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.05)
    raise TimeoutError(f"{what} not reached within {seconds} s")


class ScriptedModel:
    """The scripted server: `steps` a list plays them; an object counts (see the server)."""

    def __init__(self, steps: list[dict[str, Any]] | dict[str, Any], folder: Path) -> None:
        script = folder / f"script-{secrets.token_hex(4)}.json"
        script.write_text(json.dumps(steps))
        self.process = subprocess.Popen(
            [sys.executable, str(SCRIPTED_SERVER), str(script), "0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def requests(self) -> list[Any]:
        """The request bodies the server has received, in order."""
        url = self.base_url.removesuffix("/v1") + "/__requests"
        with urllib.request.urlopen(url, timeout=10) as response:
            return list(json.loads(response.read()))

    def counts(self) -> list[dict[str, Any]]:
        """In counting mode, per request: its counted prompt, its cap, whether refused."""
        url = self.base_url.removesuffix("/v1") + "/__counts"
        with urllib.request.urlopen(url, timeout=10) as response:
            return list(json.loads(response.read()))

    def authorization(self) -> list[str | None]:
        """The Authorization header of every POST the server has received, in order."""
        url = self.base_url.removesuffix("/v1") + "/__authorization"
        with urllib.request.urlopen(url, timeout=10) as response:
            return list(json.loads(response.read()))

    def first_text(self) -> list[float]:
        """The wall-clock time each stream's first text was written, in order."""
        url = self.base_url.removesuffix("/v1") + "/__first_text"
        with urllib.request.urlopen(url, timeout=10) as response:
            return [float(t) for t in json.loads(response.read())]

    def close(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)


class Stack:
    def __init__(self, *, redis: bool = False, extra_env: dict[str, str] | None = None) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="horsie-stack-"))
        self.env = self.base_env(redis) | (extra_env or {})
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.models: list[ScriptedModel] = []
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.manage("migrate", "--noinput")
        self.token = self.manage("horsie_token", "alice", "--team", "acme").strip().split("\n")[-1]

    def base_env(self, redis: bool) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HORSIE_", "DATABASE_"))}
        env |= {"HORSIE_VAR_DIR": str(self.folder), "PYTHONUNBUFFERED": "1"}
        env.pop("REDIS_URL", None)
        self.database = os.environ.get("DATABASE_URL", "")
        if self.database.startswith("postgres"):
            env["DATABASE_URL"] = self.fresh_postgres(self.database)
        if redis:
            env["REDIS_URL"] = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
            env["HORSIE_REDIS_PREFIX"] = f"horsie-stack-{secrets.token_hex(4)}"
        return env

    def fresh_postgres(self, url: str) -> str:
        import psycopg

        self.db_name = f"horsie_stack_{secrets.token_hex(4)}"
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{self.db_name}"')
        return urlunparse(urlparse(url)._replace(path=f"/{self.db_name}"))

    def manage(self, *args: str) -> str:
        command = [str(BIN / "python"), "manage.py", *args]
        done = subprocess.run(
            command,
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def start_web(self, *, quiet: bool = False, name: str = "web", port: int | None = None) -> str:
        """daphne on the stack's port (or `port`); `quiet` sends its access log to
        /dev/null. Returns the process's URL; a second one needs its own `name`."""
        port = port or self.port
        command = [
            str(BIN / "daphne"),
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "horsie_site.asgi:application",
        ]
        out = subprocess.DEVNULL if quiet else None
        self.processes[name] = subprocess.Popen(
            command, cwd=ROOT, env=self.env, stdout=out, stderr=out
        )
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: self.answering(url), 60, "the web process answering")
        return url

    def start_worker(self, name: str = "worker", *, quiet: bool = False) -> None:
        command = [str(BIN / "python"), "manage.py", "runworker", "horsie-turns"]
        out = subprocess.DEVNULL if quiet else None
        self.processes[name] = subprocess.Popen(
            command, cwd=ROOT, env=self.env, stdout=out, stderr=out
        )

    def kill(self, name: str) -> None:
        process = self.processes.pop(name)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

    def ok(self, path: str, url: str | None = None) -> bool:
        """`GET path` (no token) answers 2xx: not refused, not an error, not timed out."""
        try:
            with urllib.request.urlopen(f"{url or self.url}{path}", timeout=2):
                return True
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    def answering(self, url: str | None = None) -> bool:
        return self.ok("/api/v1/openapi.json", url)

    def ready(self, url: str | None = None) -> bool:
        """`GET /api/v1/health` says 200: the process's start-up work (warming) is done."""
        return self.ok("/api/v1/health", url)

    def wait_ready(self, url: str | None = None, seconds: float = 60) -> None:
        wait_until(lambda: self.ready(url), seconds, "the web process ready")

    def scripted_model(self, steps: list[dict[str, Any]]) -> ScriptedModel:
        model = ScriptedModel(steps, self.folder)
        self.models.append(model)
        return model

    def api(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.url}/api/v1{path}",
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=330) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def session_on(self, model: ScriptedModel | None, **fields: Any) -> int:
        if model is not None:
            status, card = self.api(
                "POST",
                "/models",
                {
                    "name": "scripted",
                    "wire": "openai_chat",
                    "model": "scripted",
                    "base_url": model.base_url,
                    "context_window": 8000,
                },
            )
            assert status == 201, card
            fields["model"] = card["id"]
        status, session = self.api("POST", "/sessions", fields)
        assert status == 201, session
        return int(session["id"])

    def sql(self, query: str) -> list[tuple[Any, ...]]:
        """Rows read straight from the stack's database, for what the API does not show."""
        if self.env.get("DATABASE_URL", "").startswith("postgres"):
            import psycopg

            with psycopg.connect(self.env["DATABASE_URL"], autocommit=True) as connection:
                return list(connection.execute(query).fetchall())
        import sqlite3

        connection = sqlite3.connect(self.folder / "horsie.sqlite3")
        try:
            return list(connection.execute(query).fetchall())
        finally:
            connection.close()

    def ws_url(self, session_id: int, after: int = 0, port: int | None = None) -> str:
        return f"ws://127.0.0.1:{port or self.port}/ws/v1/sessions/{session_id}/?token={self.token}&after={after}"

    def close(self) -> None:
        for process in self.processes.values():
            process.kill()
            process.wait(timeout=10)
        for model in self.models:
            model.close()
        if getattr(self, "db_name", None):
            import psycopg

            with psycopg.connect(self.database, autocommit=True) as connection:
                connection.execute(f'DROP DATABASE IF EXISTS "{self.db_name}" WITH (FORCE)')
