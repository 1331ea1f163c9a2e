"""Running a session's turns: in the in-process turn thread or a `runworker` process.

`drive_session` builds the core's dependencies for one session and drives turns until no
input is queued. Whatever goes wrong outside the core's own handling (a card whose wire is
not available, a bug) is told to the watchers as a `notice` and the lease is released, so
the session is never left stuck in `running`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from channels.consumer import AsyncConsumer
from django.conf import settings
from django.db.models import QuerySet

from harness.compaction.runner import fork_summary
from harness.loop import drive
from harness.ports import LeaseLost
from harness.runtime import Deps, SessionView, TurnConfig
from horsie_site import compiled, wiring
from memory_app.stores import OrmMemorySource
from sessions_app.branching import fork_boundary_append
from sessions_app.events import ChannelEvents
from sessions_app.leases import lease_seconds
from sessions_app.models import Session
from sessions_app.services import entry_append, session_release
from sessions_app.stores import OrmTranscriptStore, session_view
from sessions_app.subagents import OrmSubagentLauncher, subagent_report
from sessions_app.threads import db
from skills_app.stores import OrmSkillSource

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Setup:
    config: TurnConfig
    deps: Deps
    fork_pending: bool  # a fork whose summary is not written yet
    subagent: bool  # its answer goes to its parent when its run is over


@compiled.select(int)
def session_with_card(session_id: int) -> QuerySet[Session]:
    return Session.objects.select_related("model").filter(pk=session_id)


def turn_setup(session_id: int, lease: str) -> Setup:
    """Everything a runner needs from the database before its first call, in one hop: with
    the first call's view, unless a fork's summary is still to be written first."""
    session = session_with_card(session_id)[0]
    store = OrmTranscriptStore(lease)
    fork_pending = session.kind == "fork" and session.last_seq == 0
    if not fork_pending:
        store.read_ahead(session)
    deps = Deps(
        store=store,
        events=ChannelEvents(),
        provider=wiring.provider_for(session.model),
        tools=wiring.tools_for(session),
        memory=OrmMemorySource(),
        skills=OrmSkillSource(),
        subagents=OrmSubagentLauncher(),
    )
    return Setup(
        config=wiring.turn_config(session),
        deps=deps,
        fork_pending=fork_pending,
        subagent=session.kind == "subagent",
    )


def setup_ahead(session_id: int, lease: str) -> Setup | Exception:
    """`turn_setup` on the dispatching thread, once the input is committed (in-process
    dispatch): the runner starts with it and makes no trip to a thread and back for it.
    Its failure is handed to the runner, which reports it as its own."""
    try:
        return turn_setup(session_id, lease)
    except Exception as error:
        return error


async def drive_session(
    session_id: int, lease: str, ahead: Setup | Exception | None = None
) -> None:
    store: OrmTranscriptStore | None = None
    subagent = True  # unknown until set up: ask
    try:
        if isinstance(ahead, Exception):
            raise ahead
        setup = ahead or await db(turn_setup)(session_id, lease)
        store, subagent = setup.deps.store, setup.subagent  # type: ignore[assignment]
        assert store is not None
        await with_heartbeat(run_session(setup), session_id, store)
    except LeaseLost:
        log.warning("session %s: lease lost; another runner has it", session_id)
        return  # the runner that took it over reports
    except Exception as error:
        log.exception("session %s: the turn failed", session_id)
        await db(turn_failed)(session_id, store.lease if store else lease, error)
    if subagent:
        await reported(session_id)


async def reported(session_id: int) -> None:
    """A subagent's run is over: its answer goes to its parent (a failure here is logged)."""
    try:
        await db(subagent_report)(session_id)
    except Exception:
        log.exception("session %s: its answer could not be sent to its parent", session_id)


async def run_session(setup: Setup) -> None:
    """A fork's first run writes its summary; every run then drives the queued turns."""
    config, deps = setup.config, setup.deps
    if setup.fork_pending:
        await fork_summarise(config, deps)
        if not await deps.store.next_turn(config.session_id):
            return
    await drive(config, deps)


def fork_context(session_id: int) -> tuple[Session, SessionView]:
    """The parent as it was when the fork was asked for, seen through the fork's own wire."""
    child = Session.objects.select_related("parent", "parent__model").get(pk=session_id)
    parent = child.parent
    assert parent is not None
    return child, session_view(parent, upto=child.parent_seq)


async def fork_summarise(config: TurnConfig, deps: Deps) -> None:
    child, view = await db(fork_context)(config.session_id)
    summary, extra = await fork_summary(config, deps, view)
    await db(fork_boundary_append)(child, summary, extra=extra)
    if "failed" in extra:
        await deps.store.append(
            config.session_id,
            kind="notice",
            content=f"The fork's summary call failed ({extra['failed']}); the fork starts from "
            "the previous summary and the last messages, verbatim.",
            data={"code": "compaction_failed"},
        )


async def with_heartbeat(work: Awaitable[None], session_id: int, store: OrmTranscriptStore) -> None:
    """Run the turns while renewing the lease every third of its life.

    A model call can outlast the lease; the heartbeat keeps it while the runner is alive,
    so only a dead (or hung) runner's session is ever taken over. When renewing fails the
    session is someone else's: the work is cancelled and `LeaseLost` raised.
    """
    task = asyncio.ensure_future(work)
    every = lease_seconds() / 3
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every)
            if done:
                return task.result()
            await store.keep_alive(session_id)
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, LeaseLost):
                await task


def turn_failed(session_id: int, lease: str, error: Exception) -> None:
    try:
        entry_append(
            session_id=session_id,
            kind="notice",
            content=f"The turn failed: {type(error).__name__}: {error}",
            data={"code": "turn_failed"},
        )
    finally:  # the session is never left held, even when the notice cannot be written
        session_release(session_id, lease)


class TurnConsumer(AsyncConsumer):
    """`manage.py runworker horsie-turns`: runs each dispatched turn as its own task."""

    async def turn_run(self, message: dict[str, Any]) -> None:
        if not hasattr(self, "slots"):
            self.slots = asyncio.Semaphore(settings.HORSIE["WORKER_CONCURRENCY"])
            self.tasks: set[asyncio.Task[None]] = set()
        task = asyncio.create_task(self.run_one(int(message["session"]), str(message["lease"])))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def run_one(self, session_id: int, lease: str) -> None:
        async with self.slots:
            await drive_session(session_id, lease)
