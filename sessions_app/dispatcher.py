"""Turn dispatch: where a turn runs once its input is in the log.

In-process (the embedded default) turns run in the web process, on the loop daphne serves
it on (`TurnThread`). With `HORSIE_DISPATCH=channels` (the default when `REDIS_URL` is set)
the turn is sent on the `horsie-turns` channel and a worker (`manage.py runworker
horsie-turns`) runs it, so web processes and turn workers scale apart. Either way the lease taken by the caller
travels with the turn, and dispatch happens only after the input's transaction commits, in
order after the events posted before it (`outbox`).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any

from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction

from sessions_app import outbox

log = logging.getLogger(__name__)
TURN_CHANNEL = "horsie-turns"


class TurnThread:
    """Where in-process turns run.

    In a daphne process, on the loop it serves requests on, once that loop runs: a turn's
    dispatch is a task there and its events reach the `?wait` answers and sockets waiting on
    that loop, with no hop between threads (about 9% of an API turn's CPU). A turn's own
    synchronous work (assembling its context, encoding its request) then holds the process's
    other requests up for as long as it takes, a few milliseconds at 100k tokens; its
    database work runs on threads (`threads.db`). Elsewhere (a test, a management command,
    a process that has not started serving yet): one daemon thread with a loop of its own.
    With `HORSIE_DISPATCH=channels` none of this runs: workers run the turns.
    """

    _instance: TurnThread | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self._own: asyncio.AbstractEventLoop | None = None
        self._own_lock = threading.Lock()

    @classmethod
    def get(cls) -> TurnThread:
        with cls._lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        served = serving_loop()
        if served is not None and served.is_running():
            return served
        with self._own_lock:
            if self._own is None:
                self._own = asyncio.new_event_loop()
                threading.Thread(
                    target=self._own.run_forever, name="horsie-turns", daemon=True
                ).start()
            return self._own

    def submit(self, coroutine: Coroutine[Any, Any, None]) -> Future[None]:
        """Start a turn on this loop in a fresh context: a task must not inherit the
        submitting request's context (asgiref's executors live there and die with it).
        Submitted on the loop itself (a delivered dispatch), the task is made at once, with
        no wake-up of the loop through its pipe."""
        loop = self.loop
        if running_loop() is not loop:
            return contextvars.Context().run(asyncio.run_coroutine_threadsafe, coroutine, loop)
        done: Future[None] = Future()
        task = contextvars.Context().run(loop.create_task, coroutine)
        task.add_done_callback(lambda ran: settle(done, ran))
        return done


def running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def settle(done: Future[None], ran: asyncio.Task[None]) -> None:
    if ran.cancelled():
        done.cancel()
    elif ran.exception() is not None:
        done.set_exception(ran.exception())  # type: ignore[arg-type]
    else:
        done.set_result(ran.result())


def serving_loop() -> asyncio.AbstractEventLoop | None:
    """The loop daphne serves this process on, when daphne runs it (it installs twisted's
    asyncio reactor on a loop of its own before loading the application)."""
    loop = getattr(sys.modules.get("daphne.server"), "twisted_loop", None)
    return loop if isinstance(loop, asyncio.AbstractEventLoop) else None


def provider_prepare(card: Any) -> None:
    """In-process, build `card`'s provider and its SDK client on the turn loop once the
    caller commits (a new session's card, say), so that its first turn does not: about 1 ms.
    Its configuration (the outbound checks, which resolve the host, and the key) is read on
    a worker thread, never on the request. Elsewhere, or for a card that cannot be called
    (its turn will say why), nothing."""
    if settings.HORSIE["DISPATCH"] != "inprocess":
        return
    from horsie_site import wiring
    from sessions_app.threads import db

    async def prepared() -> None:
        try:
            provider = wiring.cached_provider(await db(wiring.card_config)(card))
        except Exception:
            return
        prepare = getattr(provider, "prepare", None)
        if prepare is not None:
            prepare()

    def submit() -> None:
        TurnThread.get().submit(prepared()).add_done_callback(logged)

    transaction.on_commit(submit)


def logged(done: Future[None]) -> None:
    if not done.cancelled() and done.exception() is not None:
        log.warning("a provider could not be prepared ahead", exc_info=done.exception())


def turn_dispatch(session_id: int, lease: str) -> None:
    transaction.on_commit(lambda: turn_send(session_id, lease))


def turn_send(session_id: int, lease: str) -> None:
    """After commit: in-process, the turn's setup is read here, on the committing thread
    (`worker.setup_ahead`), and handed over with the turn."""
    if settings.HORSIE["DISPATCH"] == "inprocess":
        from sessions_app.worker import setup_ahead

        ahead = setup_ahead(session_id, lease)
        outbox.post(lambda: turn_deliver(session_id, lease, ahead))
        return
    outbox.post(lambda: turn_deliver(session_id, lease))


async def turn_deliver(session_id: int, lease: str, ahead: Any = None) -> None:
    if settings.HORSIE["DISPATCH"] == "inprocess":
        from sessions_app.worker import drive_session

        TurnThread.get().submit(drive_session(session_id, lease, ahead))
        return
    layer = get_channel_layer()
    assert layer is not None, "HORSIE_DISPATCH=channels needs a channel layer"
    await layer.send(TURN_CHANNEL, {"type": "turn.run", "session": session_id, "lease": lease})
