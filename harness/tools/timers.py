"""`set_timer {"seconds", "message"}` and `cancel_timer {"id"}`.

A timer is armed by the `set_timer` result (its id and due time are in the result's data, so
the fold and the scheduler read the same thing), and fires as a `timer` entry that starts a
turn. Bad arguments are the model's to fix: they come back as an error result.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, Field

from harness.tools.base import Text, ToolContext, ToolOutcome, TypedTool, refused

MAX_SECONDS = 30 * 24 * 3600
MAX_ARMED = 20
MAX_MESSAGE = 2_000


class SetTimerArgs(BaseModel):
    seconds: float = Field(
        gt=0,
        le=MAX_SECONDS,
        allow_inf_nan=False,
        description="From now; more than 0, at most 30 days.",
    )
    message: Text = Field(
        max_length=MAX_MESSAGE, description="What to tell yourself when it fires."
    )


class CancelTimerArgs(BaseModel):
    id: str


class SetTimer(TypedTool[SetTimerArgs]):
    name = "set_timer"
    description = (
        "Arm a timer. When it is due, its message comes back to you as a new input and a "
        "turn starts, even if nobody is typing. Returns the timer's id."
    )
    Args = SetTimerArgs

    async def call(self, args: SetTimerArgs, context: ToolContext) -> ToolOutcome:
        if len(context.state.timers) >= MAX_ARMED:
            return refused(f"At most {MAX_ARMED} timers can be armed; cancel one first.")
        now = context.now or datetime.now(UTC)
        timer = {
            "id": "t-" + secrets.token_hex(4),
            "message": args.message,
            "seconds": args.seconds,
            "due_at": (now + timedelta(seconds=args.seconds)).isoformat(),
        }
        return ToolOutcome(
            text=f"Timer {timer['id']} armed; it fires at {timer['due_at']}.",
            data={"timer": timer},
        )


class CancelTimer(TypedTool[CancelTimerArgs]):
    name = "cancel_timer"
    description = "Disarm a timer you set, by its id."
    Args = CancelTimerArgs

    async def call(self, args: CancelTimerArgs, context: ToolContext) -> ToolOutcome:
        if context.state.timer(args.id) is None:
            armed = ", ".join(t.id for t in context.state.timers) or "none"
            return refused(f"No armed timer {args.id!r}. Armed: {armed}.")
        return ToolOutcome(text=f"Timer {args.id} cancelled.", data={"timer_id": args.id})
