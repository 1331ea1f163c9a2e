"""Where in-process turns run (`dispatcher.TurnThread`): on the loop daphne serves the
process on, once it runs; elsewhere on a loop of their own, on a thread of its own."""

from __future__ import annotations

import asyncio
import sys
import threading
import types

import pytest

from sessions_app.dispatcher import TurnThread


async def where() -> str:
    return threading.current_thread().name


@pytest.fixture
def daphne_loop(monkeypatch):
    """A loop running on a thread, standing where daphne keeps the loop it serves on."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="daphne-serving", daemon=True)
    monkeypatch.setitem(sys.modules, "daphne.server", types.SimpleNamespace(twisted_loop=loop))
    yield loop, thread
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)
    loop.close()


def test_turns_run_on_the_loop_daphne_serves_on_once_it_runs(daphne_loop):
    loop, thread = daphne_loop
    turns = TurnThread()
    assert turns.submit(where()).result(timeout=10) == "horsie-turns", "not running yet"
    own = turns.loop
    thread.start()
    assert turns.loop is loop
    assert turns.submit(where()).result(timeout=10) == "daphne-serving"
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)
    assert turns.loop is own, "stopped: back on the loop of their own"


def test_elsewhere_turns_run_on_a_loop_of_their_own(monkeypatch):
    monkeypatch.delitem(sys.modules, "daphne.server", raising=False)
    turns = TurnThread()
    assert turns.loop is turns.loop
    assert turns.submit(where()).result(timeout=10) == "horsie-turns"
