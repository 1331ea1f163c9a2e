"""Whether a user may still watch a session, asked at most once a second per process.

A socket checks access on connect and again before it passes on an event once its last
check is `RECHECK_SECONDS` old, so a member removed from the team stops receiving within
that time. Every socket of one process that asks about the same user and session within the
window shares one answer (and one query in flight): twenty tabs watching a turn start cost
one query, not twenty queued on the one thread that serves database calls, in front of the
turn's first delta.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from typing import Any

from channels.db import database_sync_to_async
from django.http import Http404

from sessions_app.leases import status_of
from sessions_app.selectors import access_session

RECHECK_SECONDS = 1.0
Key = tuple[Any, int]
Answers = dict[Key, tuple[float, "asyncio.Future[str | None]"]]

_answers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Answers] = (
    weakref.WeakKeyDictionary()
)


@database_sync_to_async
def may_watch(user: Any, session_id: int) -> str | None:
    """The session's status when the user may watch it, else None."""
    try:
        return status_of(access_session(user, session_id))
    except Http404:
        return None


async def still_allowed(user: Any, session_id: int) -> bool:
    """Whether the user may watch, by an answer at most `RECHECK_SECONDS` old."""
    answers = _answers.setdefault(asyncio.get_running_loop(), {})
    key, now = (user.pk, session_id), time.monotonic()
    held = answers.get(key)
    failed = (
        held is not None
        and held[1].done()
        and (held[1].cancelled() or held[1].exception() is not None)
    )
    if held is None or failed or now - held[0] >= RECHECK_SECONDS:  # a failure is not kept
        forget_stale(answers, now)
        held = answers[key] = (now, asyncio.ensure_future(may_watch(user, session_id)))
    return await asyncio.shield(held[1]) is not None


def forget_stale(answers: Answers, now: float) -> None:
    for key in [k for k, (at, _) in answers.items() if now - at >= RECHECK_SECONDS]:
        del answers[key]
