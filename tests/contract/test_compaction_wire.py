"""Compaction through the API against a provider that counts 3× chars/4 and refuses over a limit.

Each test drives a session through the real HTTP API and the real `openai_chat` wire, turns
in-process, against the scripted server in counting mode: it counts every prompt from the
request body by its own rule (not Horsie's), reports that as usage, and refuses a prompt plus
cap over its limit with OpenAI's exact `context_length_exceeded`. What is asserted is what the
server counted and refused, and what the API shows, never Horsie's own estimate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .conftest import ScriptedServer

pytestmark = [pytest.mark.contract, pytest.mark.django_db(transaction=True)]

Start = Callable[[Any], ScriptedServer]
DENSITY = 3.0
MAX_OUTPUT = 500
TROUBLE = ("provider_error", "compaction_failed", "nothing_to_fold")
REPLY = {"text": "Noted: the figures add up and nothing is out of the ordinary today."}


@pytest.fixture(autouse=True)
def real_wiring(settings: Any) -> Iterator[None]:
    """Turns in-process through `wiring.provider_for` itself: no scripted provider swapped in."""
    from horsie_site import wiring

    settings.HORSIE = {**settings.HORSIE, "DISPATCH": "inprocess"}
    wiring.cached_provider.cache_clear()
    yield
    wiring.cached_provider.cache_clear()


def csv_paste(start: int = 0) -> str:
    """90 lines like `2026-05-01,14:00:05,station 0,crate 4400,400.0 kg,ok`: ~4,900 characters."""
    lines = [
        f"2026-05-01,14:{(start + i) // 60 % 60:02d}:{(start + i) % 60:02d},station {i % 8},"
        f"crate {4400 + start + i},{400 + i * 1.5:.1f} kg,ok"
        for i in range(90)
    ]
    return "\n".join(lines)


def prose(n: int) -> str:
    return (
        f"Note {n}: the morning shift moved the heavy crates to the east dock before the trucks "
        "arrived, and the scales were checked twice against the reference weight. "
    ) * 3


class Wire:
    """One session on a card aimed at a counting server, driven through the HTTP API."""

    def __init__(self, api: Any, server: ScriptedServer, window: int, **session: Any) -> None:
        self.api = api
        self.server = server
        card = api.post(
            "/models",
            {
                "name": "counting",
                "wire": "openai_chat",
                "model": "scripted",
                "base_url": server.base_url,
                "context_window": window,
                "max_output_tokens": MAX_OUTPUT,
            },
        )
        assert card.status_code == 201, card.content
        created = api.post("/sessions", {"model": card.json()["id"], **session})
        assert created.status_code == 201, created.content
        self.id = created.json()["id"]
        self.turns: list[list[dict[str, Any]]] = []

    def say(self, text: str) -> list[dict[str, Any]]:
        r = self.api.post(f"/sessions/{self.id}/messages?wait=60", {"text": text})
        assert r.status_code == 200, r.content
        body = r.json()
        assert body["status"] == "idle", body
        self.turns.append(body["entries"])
        return list(body["entries"])

    def get(self, path: str = "") -> dict[str, Any]:
        r = self.api.get(f"/sessions/{self.id}{path}")
        assert r.status_code == 200, r.content
        return dict(r.json())


def answered(entries: list[dict[str, Any]]) -> bool:
    return any(e["kind"] == "assistant" for e in entries)


def codes(entries: list[dict[str, Any]]) -> list[str]:
    return [e["data"].get("code") for e in entries if e["kind"] == "notice"]


def after_boundaries(counts: list[dict[str, Any]]) -> list[int]:
    """The prompt the server counted on the first ordinary call after each summary call."""
    after: list[int] = []
    waiting = False
    for count in counts:
        if count["refused"]:
            continue
        if count["summary"]:
            waiting = True
        elif waiting:
            after.append(count["prompt_tokens"])
            waiting = False
    return after


def test_repeated_csv_pastes_never_wedge_the_session(api_for: Any, scripted_server: Start) -> None:
    server = scripted_server({"density": DENSITY, "limit": 8000, "reply": REPLY})
    wire = Wire(api_for("alice"), server, 8000)
    texts = [
        "Here is today's weigh log:\n" + csv_paste(0),
        "What is the heaviest crate?",
        "And the afternoon log:\n" + csv_paste(90),
        "Which station handled the most?",
        "One more log:\n" + csv_paste(180),
        *[f"Question {n}: " + prose(n) for n in range(8)],
        "The late log:\n" + csv_paste(270),
        "Thanks, that is all for now.",
    ]
    for text in texts:
        wire.say(text)
    settled = wire.turns[3:]
    assert all(answered(turn) for turn in settled), [codes(t) for t in settled]
    assert not [c for turn in settled for c in codes(turn) if c in TROUBLE]
    counts = server.counts()
    assert not any(c["refused"] for c in counts[4:]), "refused after the first few turns"
    assert any(c["summary"] for c in counts), "the pastes were folded"
    context = wire.get("/context")
    assert context["tokens"] <= context["window"] == 8000
    last = [c for c in counts if not c["summary"]][-1]
    assert last["prompt_tokens"] + last["max_tokens"] <= 8000


def test_a_window_declared_too_large_is_learned_and_kept(
    api_for: Any, scripted_server: Start
) -> None:
    server = scripted_server({"density": DENSITY, "limit": 6000, "reply": REPLY})
    wire = Wire(api_for("alice"), server, 100_000)
    for n in range(24):
        wire.say(f"Turn {n}. " + prose(n) * 2)
    refused = [i for i, c in enumerate(server.counts()) if c["refused"]]
    assert len(refused) <= 1, refused
    assert refused, "the declared window was never reached: the test proves nothing"
    learned = next(i for i, turn in enumerate(wire.turns) if "window_learned" in codes(turn))
    later = wire.turns[learned:]
    assert all(answered(turn) for turn in later), [codes(t) for t in later]
    assert not [c for turn in later for c in codes(turn) if c in TROUBLE]
    assert learned < len(wire.turns) - 10, "too few turns after the refusal to show it holds"
    context = wire.get()["context"]
    assert context["effective_window"] == 6000
    assert context["window"] == 100_000
    assert len(after_boundaries(server.counts())) >= 2, "it keeps compacting within 6,000"


def test_compact_at_earlier_than_default_keeps_the_prompt_under_it(
    api_for: Any, scripted_server: Start
) -> None:
    server = scripted_server({"density": DENSITY, "limit": 8000, "reply": REPLY})
    wire = Wire(api_for("alice"), server, 8000, compact_at=0.4)
    for n in range(20):
        wire.say(f"Turn {n}. " + prose(n))
    assert all(answered(turn) for turn in wire.turns), [codes(t) for t in wire.turns]
    assert not [c for turn in wire.turns for c in codes(turn) if c in TROUBLE]
    counts = server.counts()
    assert not any(c["refused"] for c in counts)
    after = after_boundaries(counts)
    assert len(after) >= 2, "boundaries happen"
    ordinary = [c["prompt_tokens"] for c in counts if not c["summary"]]
    one_turn = max(b - a for a, b in zip(ordinary, ordinary[1:], strict=False))
    assert max(after) <= 0.4 * 8000 + one_turn, (after, one_turn)
    assert max(ordinary) <= 0.4 * 8000 + one_turn, (ordinary, one_turn)
    assert max(after) < 0.4 * 8000, "a fold lands below the trigger, not on it"
    folds = sum(c["summary"] for c in counts)
    assert folds <= len(wire.turns) // 2 + 1, "not a compaction on every turn"
