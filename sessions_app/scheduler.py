"""The scheduler: fires due timers and takes over sessions whose runner died.

Every process that serves the ASGI application (each `daphne` and each `runworker`) runs
one scheduler thread that ticks once a second. Ticks in several processes are safe:

- a timer fires only for the process whose `DELETE` of its `ArmedTimer` row succeeds, in the
  transaction that queues the `timer` input, so it fires once;
- a dead runner's session is taken over through the lease (`lease_take_over`), which one
  process wins; the winner closes or resumes the interrupted turn (`turn_interrupted`);
- input stranded with no runner (a process died between storing it and dispatching) is
  picked up the same way.

Timers armed before a restart are rows in the database, so they fire after it; one that came
due while nothing ran fires at the first tick. Each session is handled on its own: one whose
turn cannot start (a bug, poisoned data) is logged and skipped, and the tick goes on to the
next session, so one broken session never stops timers or recovery for the others.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta

from django.db import close_old_connections, transaction
from django.db.models import Q
from django.utils import timezone

from sessions_app.models import ArmedTimer, QueuedInput, Session
from sessions_app.services import turn_start

log = logging.getLogger(__name__)
TICK_SECONDS = 1.0
STRANDED_AFTER = timedelta(seconds=3)
BATCH = 100


def tick(now: datetime | None = None) -> tuple[int, int]:
    """One pass: fire what is due, recover what is stranded. Returns (fired, recovered)."""
    now = now or timezone.now()
    fired = timers_fire_due(now)
    recovered = sessions_recover(now)
    return fired, recovered


def timers_fire_due(now: datetime) -> int:
    fired = 0
    due = ArmedTimer.objects.filter(due_at__lte=now).order_by("due_at")[:BATCH]
    for timer in list(due):
        if isolated(timer.session_id, "firing a timer", lambda t=timer: timer_fire(t)):
            fired += 1
            isolated(
                timer.session_id, "starting its turn", lambda t=timer: turn_start(t.session_id)
            )
    return fired


def isolated(session_id: int, what: str, work: Callable[[], object]) -> bool:
    """Run one session's work and say whether it did; a failure is logged, never raised."""
    try:
        return bool(work())
    except Exception:
        log.exception("scheduler: %s for session %s failed; going on", what, session_id)
        return False


def timer_fire(timer: ArmedTimer) -> bool:
    """Queue the timer's input if this process is the one that claims it."""
    with transaction.atomic():
        claimed, _ = ArmedTimer.objects.filter(pk=timer.pk).delete()
        if not claimed:
            return False
        QueuedInput.objects.create(
            session_id=timer.session_id,
            kind="timer",
            text=timer.message,
            data={"timer": timer.timer_id, "due_at": timer.due_at.isoformat()},
        )
    return True


def sessions_recover(now: datetime) -> int:
    expired = Q(lease_owner__isnull=False, lease_expires_at__lt=now)
    stranded = Q(
        lease_owner__isnull=True,
        pk__in=QueuedInput.objects.filter(created_at__lt=now - STRANDED_AFTER).values("session"),
    )
    ids = list(Session.objects.filter(expired | stranded).values_list("pk", flat=True)[:BATCH])
    return sum(
        isolated(session_id, "recovering it", lambda s=session_id: bool(turn_start(s)) or True)
        for session_id in ids
    )


class Scheduler:
    """The once-a-second loop, on a daemon thread; one per process."""

    _started = False
    _lock = threading.Lock()

    @classmethod
    def start(cls) -> None:
        with cls._lock:
            if cls._started:
                return
            cls._started = True
        threading.Thread(target=cls.run, name="horsie-scheduler", daemon=True).start()

    @staticmethod
    def run() -> None:
        stop = threading.Event()
        while not stop.wait(TICK_SECONDS):
            try:
                close_old_connections()
                tick()
            except Exception:  # a bad tick must not end the loop
                log.exception("scheduler tick failed")
