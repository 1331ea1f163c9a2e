"""A real Horsie: daphne on a fresh SQLite in a temporary var dir, a scripted model server,
two users on one team, and Debian's Chromium driven by Playwright.

Every process is started here and stopped at teardown; every wait has a deadline and waits
on something happening (a line printed, a DOM change), never on the clock.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.stack import free_port
from tests.support.stack import run_manage as manage

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".venv" / "bin"
PYTHON = str(BIN / "python") if (BIN / "python").exists() else sys.executable
SCRIPTED_SERVER = ROOT / "tests" / "contract" / "scripted_openai_server.py"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
START_SECONDS = 30
WAIT_MS = 20_000
PASSWORDS = {"alice": "alice-pass-123", "bob": "bob-pass-123"}


class Lines:
    """Drains a process's output on a thread, so the pipe never fills; lines can be awaited."""

    def __init__(self, stream: Any) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self.drain, args=(stream,), daemon=True).start()

    def drain(self, stream: Any) -> None:
        for line in stream:
            self.seen.append(line)
            self.lines.put(line)

    def wait_for(self, text: str, seconds: float = START_SECONDS) -> str:
        try:
            while True:
                line = self.lines.get(timeout=seconds)
                if text in line:
                    return line
        except queue.Empty:
            raise AssertionError(f"never saw {text!r}; output:\n{''.join(self.seen)}") from None


def stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@dataclass(frozen=True, kw_only=True)
class Horsie:
    url: str
    tokens: dict[str, str]
    passwords: dict[str, str]

    def api(self, method: str, path: str, user: str, body: Any = None) -> Any:
        request = urllib.request.Request(
            f"{self.url}/api/v1{path}",
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={
                "Authorization": f"Bearer {self.tokens[user]}",
                "Content-Type": "application/json",
            },
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)


@pytest.fixture(scope="module")
def server_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    var = tmp_path_factory.mktemp("horsie-var")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(HORSIE_VAR_DIR=str(var), HORSIE_DISPATCH="inprocess", PYTHONUNBUFFERED="1")
    env.pop("DJANGO_SETTINGS_MODULE", None)
    manage(env, "migrate", "--noinput")
    return env


@pytest.fixture(scope="module")
def model_server(tmp_path_factory: pytest.TempPathFactory, request: Any) -> Iterator[str]:
    """The scripted OpenAI-compatible server, playing the steps the test module declares."""
    script = tmp_path_factory.mktemp("script") / "script.json"
    script.write_text(json.dumps(getattr(request.module, "SCRIPT", [])))
    process = subprocess.Popen(
        [PYTHON, str(SCRIPTED_SERVER), str(script), "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        port = int(Lines(process.stdout).wait_for(""))
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop(process)


def users_create(env: dict[str, str]) -> dict[str, str]:
    """alice and bob on team acme, with passwords for the login form; returns API tokens."""
    tokens = {
        name: manage(env, "horsie_token", name, "--team", "acme").strip().splitlines()[-1]
        for name in PASSWORDS
    }
    code = (
        "from django.contrib.auth.models import User\n"
        f"for name, password in {PASSWORDS!r}.items():\n"
        "    user = User.objects.get(username=name); user.set_password(password); user.save()"
    )
    manage(env, "shell", "-c", code)
    return tokens


def daphne_start(env: dict[str, str], port: int) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [str(BIN / "daphne"), "-b", "127.0.0.1", "-p", str(port), "horsie_site.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    try:
        Lines(process.stderr).wait_for(f"Listening on TCP address 127.0.0.1:{port}")
    except AssertionError:
        stop(process)
        raise
    return process


@pytest.fixture(scope="module")
def horsie(server_env: dict[str, str], model_server: str) -> Iterator[Horsie]:
    tokens = users_create(server_env)
    port = free_port()
    process = daphne_start(server_env, port)
    try:
        server = Horsie(url=f"http://127.0.0.1:{port}", tokens=tokens, passwords=PASSWORDS)
        card = {"name": "Scripted", "wire": "openai_chat", "model": "scripted",
                "base_url": model_server, "context_window": 8000, "max_output_tokens": 512}  # fmt: skip
        server.api("POST", "/models", "alice", card)
        yield server
    finally:
        stop(process)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=WAIT_MS)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


# Pages ---------------------------------------------------------------------------------

# Records every text the streaming bubble shows, so a test can see a reply stream in.
WATCH_STREAM = """
document.addEventListener("DOMContentLoaded", () => {
  window.horsieStream = [];
  const bubble = document.getElementById("streaming");
  if (!bubble) return;
  new MutationObserver(() => {
    if (!bubble.hidden) window.horsieStream.push(bubble.querySelector(".body").textContent);
  }).observe(bubble, {subtree: true, childList: true, characterData: true, attributes: true});
});
"""


def logged_in(browser: Any, horsie: Horsie, username: str, viewport: Any = None) -> Any:
    """A new browser context, logged in through the login form, on the session list."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport=viewport or {"width": 1360, "height": 860})
    context.set_default_timeout(WAIT_MS)
    context.add_init_script(WATCH_STREAM)
    page = context.new_page()
    page.goto(f"{horsie.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(horsie.passwords[username])
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
    return page


def watching(page: Any) -> None:
    """Wait until the page's websocket is open: from then on it sees every event."""
    from playwright.sync_api import expect

    expect(page.locator("#live")).to_have_attribute("data-live", "open", timeout=WAIT_MS)
