"""`set_timer {"seconds", "message"}` and `cancel_timer {"id"}`.

A timer is armed by the `set_timer` result (its id and due time are in the result's data, so
the fold and the scheduler read the same thing), and fires as a `timer` entry that starts a
turn. Bad arguments are the model's to fix: they come back as an error result.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from harness.messages import ToolSpec
from harness.tools.base import ToolContext, ToolOutcome, refused

MAX_SECONDS = 30 * 24 * 3600
MAX_ARMED = 20
MAX_MESSAGE = 2_000

SET_SPEC = ToolSpec(
    name="set_timer",
    description=(
        "Arm a timer. When it is due, its message comes back to you as a new input and a "
        "turn starts, even if nobody is typing. Returns the timer's id."
    ),
    parameters={
        "type": "object",
        "properties": {
            "seconds": {"type": "number", "description": "From now; more than 0, at most 30 days."},
            "message": {"type": "string", "description": "What to tell yourself when it fires."},
        },
        "required": ["seconds", "message"],
    },
)

CANCEL_SPEC = ToolSpec(
    name="cancel_timer",
    description="Disarm a timer you set, by its id.",
    parameters={
        "type": "object",
        "properties": {"id": {"type": "string"}},
        "required": ["id"],
    },
)


def seconds_problem(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return '"seconds" must be a number.'
    if value <= 0:
        return '"seconds" must be more than 0.'
    if value > MAX_SECONDS:
        return f'"seconds" must be at most {MAX_SECONDS} (30 days).'
    return None


class SetTimer:
    spec = SET_SPEC

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        seconds = arguments.get("seconds")
        message = arguments.get("message")
        problem = seconds_problem(seconds)
        if problem is not None:
            return refused(problem)
        if not isinstance(message, str) or not message.strip():
            return refused('"message" must be a non-empty string.')
        if len(message) > MAX_MESSAGE:
            return refused(f'"message" must be at most {MAX_MESSAGE} characters.')
        if len(context.state.timers) >= MAX_ARMED:
            return refused(f"At most {MAX_ARMED} timers can be armed; cancel one first.")
        now = context.now or datetime.now(UTC)
        assert isinstance(seconds, int | float)
        due = now + timedelta(seconds=float(seconds))
        timer = {
            "id": "t-" + secrets.token_hex(4),
            "message": message.strip(),
            "seconds": float(seconds),
            "due_at": due.isoformat(),
        }
        return ToolOutcome(
            text=f"Timer {timer['id']} armed; it fires at {timer['due_at']}.",
            data={"timer": timer},
        )


class CancelTimer:
    spec = CANCEL_SPEC

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        timer_id = arguments.get("id")
        if not isinstance(timer_id, str) or context.state.timer(timer_id) is None:
            armed = ", ".join(t.id for t in context.state.timers) or "none"
            return refused(f"No armed timer {timer_id!r}. Armed: {armed}.")
        return ToolOutcome(text=f"Timer {timer_id} cancelled.", data={"timer_id": timer_id})
