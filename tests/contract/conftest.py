"""Contract fixtures: scripted servers (chat completions, Responses, Anthropic Messages), each a
real separate process."""

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
RESPONSES_SCRIPT = Path(__file__).with_name("scripted_responses_server.py")
ANTHROPIC_SCRIPT = Path(__file__).with_name("scripted_anthropic_server.py")


@dataclass(frozen=True, kw_only=True)
class ScriptedServer:
    port: int
    path: str = "/v1"  # the SDK's base URL path (Anthropic's SDK adds /v1 itself)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

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

    def connections(self) -> int:
        """How many connections carried a POST (the chat-completions server)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/__connections") as response:
            return int(json.load(response))

    def authorization(self) -> list[str | None]:
        """The Authorization header of every POST the server has received, in order."""
        url = f"http://127.0.0.1:{self.port}/__authorization"
        with urllib.request.urlopen(url) as response:
            headers: list[str | None] = json.load(response)
        return headers


def _servers(
    tmp_path: Path, server_script: Path, path: str = "/v1"
) -> Iterator[Callable[[Any], ScriptedServer]]:
    processes: list[subprocess.Popen[str]] = []

    def start(steps: Any) -> ScriptedServer:
        script = tmp_path / f"{server_script.stem}-{len(processes)}.json"
        script.write_text(json.dumps(steps))
        process = subprocess.Popen(
            [sys.executable, str(server_script), str(script), "0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        processes.append(process)
        assert process.stdout is not None
        return ScriptedServer(port=int(process.stdout.readline()), path=path)

    yield start
    for process in processes:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def scripted_server(tmp_path: Path) -> Iterator[Callable[[Any], ScriptedServer]]:
    """Start a server playing the given steps (a list), or counting (an object: see the
    server's docstring); every server started is stopped at teardown."""
    yield from _servers(tmp_path, SERVER_SCRIPT)


@pytest.fixture
def responses_server(tmp_path: Path) -> Iterator[Callable[[Any], ScriptedServer]]:
    """Start a scripted Responses API server playing the given steps."""
    yield from _servers(tmp_path, RESPONSES_SCRIPT)


@pytest.fixture
def anthropic_server(tmp_path: Path) -> Iterator[Callable[[Any], ScriptedServer]]:
    """Start a scripted Anthropic Messages API server playing the given steps."""
    yield from _servers(tmp_path, ANTHROPIC_SCRIPT, path="")
