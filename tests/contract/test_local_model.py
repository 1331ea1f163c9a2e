"""The bundled model, really loaded: in-process on the local wire and behind llama_cpp.server.

The model is tiny, so these check mechanics (deltas arrive, a response ends the stream, usage
is counted), never what it says.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.messages import (
    ModelRequest,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolSpec,
    UserMessage,
)
from harness.providers import build_provider
from harness.providers.base import CardConfig, Provider, RetryPolicy, UnsupportedRequest
from harness.providers.local import default_model_path

pytestmark = pytest.mark.localmodel

CARD = CardConfig(wire="local", model="smollm2-135m", context_window=2048, max_output_tokens=16)
HELLO = ModelRequest(messages=(UserMessage(text="Say hello."),))
READY_TIMEOUT = 60.0
POLL_INTERVAL = 0.25


async def events_of(provider: Provider, request: ModelRequest) -> list[StreamEvent]:
    return [event async for event in provider.stream(request)]


def assert_a_reply(events: list[StreamEvent]) -> None:
    assert any(isinstance(event, TextDelta) for event in events)
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.text
    assert done.response.usage is not None
    assert done.response.usage.output_tokens > 0


async def test_the_bundled_model_streams_a_reply() -> None:
    events = await events_of(build_provider(CARD), HELLO)
    assert_a_reply(events)


async def test_a_request_with_tools_is_unsupported() -> None:
    tool = ToolSpec(name="noop", description="Does nothing.", parameters={"type": "object"})
    request = ModelRequest(messages=HELLO.messages, tools=(tool,))
    with pytest.raises(UnsupportedRequest):
        await events_of(build_provider(CARD), request)


# The openai_chat wire against a real model server.


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def wait_until_ready(process: subprocess.Popen[bytes], url: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        assert process.poll() is None, "llama_cpp.server exited before it was ready"
        try:
            with urllib.request.urlopen(url, timeout=POLL_INTERVAL * 4):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(POLL_INTERVAL)
    pytest.fail(f"llama_cpp.server was not ready within {READY_TIMEOUT} s")


@pytest.fixture
def llama_server(tmp_path: Path) -> Iterator[str]:
    """A real llama_cpp.server on the bundled model; yields its base URL."""
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(default_model_path()),
               "--n_threads", "1", "--interrupt_requests", "False",
               "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    with (tmp_path / "llama-server.log").open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until_ready(process, f"http://127.0.0.1:{port}/v1/models")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(timeout=10)


async def test_openai_chat_streams_from_llama_cpp_server(llama_server: str) -> None:
    card = CardConfig(
        wire="openai_chat", model="smollm2", base_url=llama_server, max_output_tokens=16
    )
    provider = build_provider(card, {"timeout": 60.0, "retry": RetryPolicy(attempts=1)})
    events = await events_of(provider, HELLO)
    assert any(isinstance(event, TextDelta) for event in events)
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.text


async def test_a_long_session_on_the_bundled_model_compacts_and_never_wedges() -> None:
    """Messages of ~500 tokens against a 2,048-token window: one turn can take the prompt
    from below the trigger to past what a summary request holds. Every turn must still
    get a reply, through several compactions."""
    from harness.compaction.policy import Policy
    from harness.loop import run_turn
    from harness.runtime import Deps, TurnConfig
    from harness.testing import MemoryStore, RecordingEvents

    card = CardConfig(wire="local", model="smollm2-135m", context_window=2048, max_output_tokens=48)
    store = MemoryStore()
    config = TurnConfig(
        session_id=1,
        system_prompt="Answer in one sentence.",
        max_steps=3,
        max_output_tokens=48,
        model="smollm2-135m",
        policy=Policy(window=2048, max_output_tokens=48),
    )
    deps = Deps(store=store, events=RecordingEvents(), provider=build_provider(card), tools={})
    for n in range(1, 9):
        text = f"Note {n}: the relay station {n} needs fresh horses. " + "hay and oats " * 120
        await store.append(1, kind="user", content=text)
        assert await run_turn(config, deps) == "reply", store.entries[-1]
        assert store.entries[-1].kind == "assistant"
    boundaries = [e for e in store.entries if e.kind == "boundary"]
    assert len(boundaries) >= 2
    assert all(b.content.strip() for b in boundaries)
    assert not [e for e in store.entries if e.kind == "notice"], "no failed call or fold"


CSV_PASTE = "".join(
    f"2026-05-01,14:00:{m % 60:02d},station {m % 5},crate {4400 + m},400.0 kg,ok\n"
    for m in range(90)
)


@pytest.mark.django_db(transaction=True)
def test_a_csv_paste_and_a_fork_on_the_bundled_model(api_for, settings) -> None:
    """A 4,900-character CSV is ~3,800 tokens for this model's tokenizer (~1,200 by chars/4)
    on a 2,048-token window. It is stored whole, shown as head and tail, and answered; every
    later turn is too; "Fork with summary" writes its summary on the local wire (no tools)."""
    settings.HORSIE = {**settings.HORSIE, "DISPATCH": "inprocess"}
    alice = api_for("alice")
    session = alice.post("/sessions", {"title": "Crates"}).json()
    sid = session["id"]
    assert session["context"]["window"] == 2048 and session["context"]["tokens"] > 0

    first = alice.post(f"/sessions/{sid}/messages?wait=240", {"text": CSV_PASTE}).json()
    kinds = [e["kind"] for e in first["entries"]]
    assert kinds[0] == "user" and first["entries"][0]["content"] == CSV_PASTE, "stored whole"
    assert "assistant" in kinds, first["entries"]
    for n in range(2):
        later = alice.post(f"/sessions/{sid}/messages?wait=240", {"text": f"And crate {n}?"})
        entries = later.json()["entries"]
        assert entries[-1]["kind"] == "assistant", entries
        failures = [
            e for e in entries if e["data"].get("code") in ("provider_error", "compaction_failed")
        ]
        assert failures == []
    detail = alice.get(f"/sessions/{sid}").json()
    context = alice.get(f"/sessions/{sid}/context").json()
    assert detail["last_error"] is None
    assert detail["context"]["tokens"] == context["tokens"] <= 2048, "the meter is the view"
    assert all(b["role"] != "tools" for b in context["blocks"]), "the local wire offers no tools"

    fork = alice.post(f"/sessions/{sid}/fork?wait=240").json()
    log = alice.get(f"/sessions/{fork['id']}/entries").json()["entries"]
    assert log[0]["kind"] == "boundary" and log[0]["content"].strip()
    assert "failed" not in log[0]["data"], log[0]["data"]
    assert not [e for e in log if e["data"].get("code") == "compaction_failed"]
