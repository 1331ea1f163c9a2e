"""Contract fixtures: a scripted OpenAI-compatible server as a real separate process."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SERVER_SCRIPT = Path(__file__).with_name("scripted_openai_server.py")


@dataclass(frozen=True, kw_only=True)
class ScriptedServer:
    port: int

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def requests(self) -> list[dict[str, Any]]:
        """Every chat-completions request body the server has received, in order."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/__requests") as response:
            bodies: list[dict[str, Any]] = json.load(response)
        return bodies

    def counts(self) -> list[dict[str, Any]]:
        """In counting mode, per request: its counted prompt, its cap, whether refused."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/__counts") as response:
            counts: list[dict[str, Any]] = json.load(response)
        return counts

    def authorization(self) -> list[str | None]:
        """The Authorization header of every POST the server has received, in order."""
        url = f"http://127.0.0.1:{self.port}/__authorization"
        with urllib.request.urlopen(url) as response:
            headers: list[str | None] = json.load(response)
        return headers


@pytest.fixture
def scripted_server(tmp_path: Path) -> Iterator[Callable[[Any], ScriptedServer]]:
    """Start a server playing the given steps (a list), or counting (an object: see the
    server's docstring); every server started is stopped at teardown."""
    processes: list[subprocess.Popen[str]] = []

    def start(steps: Any) -> ScriptedServer:
        script = tmp_path / f"script-{len(processes)}.json"
        script.write_text(json.dumps(steps))
        process = subprocess.Popen(
            [sys.executable, str(SERVER_SCRIPT), str(script), "0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        processes.append(process)
        assert process.stdout is not None
        return ScriptedServer(port=int(process.stdout.readline()))

    yield start
    for process in processes:
        process.terminate()
        process.wait(timeout=10)
