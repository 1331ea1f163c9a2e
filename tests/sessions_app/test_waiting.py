"""`?wait`'s waiting: with the embedded layer, on the request's own thread, listening to the
session's group (no channel, no hop to the loop); with another layer, on the loop."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from channels.layers import InMemoryChannelLayer

from horsie_site.layers import EmbeddedChannelLayer
from sessions_app import waiting
from sessions_app.events import group_name, layer_message
from sessions_app.models import Session

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def layer(monkeypatch):
    layer = EmbeddedChannelLayer()
    monkeypatch.setattr(waiting, "events_layer", lambda: layer)
    return layer


def status_is(session: Session, status: str) -> None:
    Session.objects.filter(pk=session.pk).update(status=status)


def sent_from_another_loop(layer: EmbeddedChannelLayer, session: Session, *statuses: str):
    """Once someone listens, the statuses sent to the session's group from a loop of its own."""

    def send() -> None:
        deadline = time.monotonic() + 10
        while group_name(session.pk) not in layer.listeners and time.monotonic() < deadline:
            time.sleep(0.005)

        async def all_of_them() -> None:
            await layer.group_send(group_name(session.pk), layer_message({"type": "entry"}))
            for status in statuses:
                await layer.group_send(
                    group_name(session.pk), layer_message({"type": "status", "status": status})
                )

        asyncio.run(all_of_them())

    thread = threading.Thread(target=send)
    thread.start()
    return thread


def test_it_waits_on_its_own_thread_for_the_status_that_settles(session, layer):
    status_is(session, "running")
    sender = sent_from_another_loop(layer, session, "running", "waiting", "idle")
    assert waiting.settled_status(session.pk, 10) == "waiting"  # the first that settles
    sender.join(timeout=10)
    assert layer.listeners == {} and layer.channels == {} and layer.groups == {}


def test_a_status_sent_between_listening_and_reading_is_not_missed(session, layer, monkeypatch):
    status_is(session, "running")
    read = waiting.status_now

    def read_while_the_turn_ends(session_id: int) -> str:
        asyncio.run(
            layer.group_send(
                group_name(session_id), layer_message({"type": "status", "status": "idle"})
            )
        )
        return read(session_id)  # still "running": the row was read before the turn ended

    monkeypatch.setattr(waiting, "status_now", read_while_the_turn_ends)
    began = time.monotonic()
    assert waiting.settled_status(session.pk, 10) == "idle"
    assert time.monotonic() - began < 5


def test_it_answers_at_once_when_settled_and_gives_up_when_the_time_is_out(session, layer):
    status_is(session, "idle")
    assert waiting.settled_status(session.pk, 10) == "idle"
    status_is(session, "running")
    began = time.monotonic()
    assert waiting.settled_status(session.pk, 0.3) == "running"
    assert 0.3 <= time.monotonic() - began < 5
    assert layer.listeners == {}


def test_listeners_hear_their_group_only_until_they_stop():
    layer = EmbeddedChannelLayer()
    heard: list[tuple[str, int]] = []
    stop_a = layer.listen("session.1", lambda m: heard.append(("a", m["n"])))
    stop_b = layer.listen("session.1", lambda m: heard.append(("b", m["n"])))
    layer.listen("session.2", lambda m: heard.append(("other", m["n"])))

    async def send(n: int) -> None:
        await layer.group_send("session.1", {"type": "x", "n": n})

    asyncio.run(send(1))
    stop_a()
    asyncio.run(send(2))
    stop_b()
    asyncio.run(send(3))
    assert heard == [("a", 1), ("b", 1), ("b", 2)]
    assert list(layer.listeners) == ["session.2"]


def test_another_layer_waits_on_the_loop(session, monkeypatch):
    monkeypatch.setattr(waiting, "events_layer", lambda: InMemoryChannelLayer())
    asked: list[tuple[int, float, bool]] = []
    caller = threading.current_thread()

    async def on_the_loop(session_id: int, seconds: float) -> str:
        asked.append((session_id, seconds, threading.current_thread() is caller))
        return "waiting"

    monkeypatch.setattr(waiting, "wait_settled", on_the_loop)
    assert waiting.settled_status(session.pk, 7) == "waiting"
    assert asked == [(session.pk, 7, False)]  # on a loop of its own, not this thread
