"""Running a compaction: the summary call, the boundary entry, and the fallbacks.

Called by the turn loop before a model call (auto), at a turn boundary (`/compact`), or
when the provider says the context was too long (overflow). Compaction is the harness's own
action: it is not a step, nothing streams to watchers, and its usage is recorded on the
boundary apart from the turns'. When the summary call fails, a `notice` says so and the
fallback clears old tool outputs instead; the loop retries at the next turn boundary.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from harness.compaction import (
    Policy,
    clear_point,
    fits,
    handoff_request,
    plan_cut,
    squeezed,
    summary_request,
)
from harness.context import Context, assemble, latest_boundary, message_text
from harness.messages import LogEntry, ModelRequest, Usage
from harness.providers.base import Provider, ProviderError, complete
from harness.state import durable

if TYPE_CHECKING:
    from harness.loop import Deps, TurnConfig

Outcome = Literal["compacted", "cleared", "nothing", "failed"]
Trigger = Literal["auto", "manual", "overflow"]


def policy_of(config: TurnConfig, context: Context) -> Policy:
    """The session's policy; with no window (a manual /compact), budgets follow the context."""
    policy = config.policy or Policy(window=None, max_output_tokens=config.max_output_tokens or 0)
    if policy.window is not None:
        return policy
    from dataclasses import replace

    return replace(policy, window=max(context.tokens, 1))


async def compact(
    config: TurnConfig,
    deps: Deps,
    *,
    trigger: Trigger,
    context: Context,
    entries: Sequence[LogEntry],
    tokens_before: int,
    instructions: str | None = None,
) -> Outcome:
    policy = policy_of(config, context)
    boundary = latest_boundary(entries)
    cut_now = int(boundary.data.get("first_kept_seq", 0)) if boundary else 0
    visible = [e for e in entries if e.seq >= cut_now and e.kind != "boundary"]
    cut = plan_cut(visible, policy.recent_budget)
    if cut is None:
        await say(config, deps, "nothing_to_fold", NOTHING_TO_FOLD)
        return "nothing"
    if policy.clear_tool_results and trigger == "auto":
        cleared = await clear(config, deps, policy, context, entries, tokens_before, "auto")
        if cleared is not None and cleared < (policy.trigger_tokens or 0):
            return "cleared"
        context, entries = await rebuilt(config, deps)
    try:
        written = await fold(config, deps, policy, context, entries, cut, instructions)
    except ProviderError as error:
        cleared = await clear(config, deps, policy, context, entries, tokens_before, "fallback")
        await say(
            config,
            deps,
            "compaction_failed",
            f"Compaction failed ({error}). "
            + ("Old tool outputs were cleared instead. " if cleared is not None else "")
            + "Compaction is tried again at the next turn boundary.",
            error=error.code,
        )
        return "failed"
    state = await deps.store.state(config.session_id)
    data: dict[str, Any] = {
        "first_kept_seq": cut,
        "carried": durable(state),
        "trigger": "manual" if trigger == "manual" else "auto",
        "reason": trigger,
        "instructions": instructions,
        "tokens_before": tokens_before,
        "covers": [visible[0].seq, cut - 1],
        "previous_boundary": boundary.seq if boundary else None,
        **written.accounting(config.model),
    }
    summary = written.text
    data["tokens_after"] = tokens_after(config, context, entries, summary, data)
    await deps.store.append(config.session_id, kind="boundary", content=summary, data=data)
    return "compacted"


async def fold(
    config: TurnConfig,
    deps: Deps,
    policy: Policy,
    context: Context,
    entries: Sequence[LogEntry],
    cut: int,
    instructions: str | None,
) -> Written:
    """The summary call. First the current context plus the instruction, which shares the
    last call's prefix; when that cannot fit the window (a turn that jumped far past the
    trigger) or the provider says it is too long, only the span being folded, its longest
    messages cut in the middle if even that is too big."""
    boundary = latest_boundary(entries)
    window = config.policy.window if config.policy else None
    ask = functools.partial(
        summary_request,
        has_previous=bool(boundary and boundary.content.strip()),
        budget=policy.summary_budget,
        instructions=instructions,
        max_output_tokens=config.max_output_tokens,
    )
    request = ask(context, anchor=anchor_text(next(e for e in entries if e.seq == cut)))
    if fits(request, window):
        try:
            return await summarise(deps.provider, request)
        except ProviderError as error:
            if error.code != "context_length_exceeded":
                raise
    folded = [e for e in entries if e.seq < cut or e is boundary]
    span = assemble(system_prompt=config.system_prompt, tools=context.tools, entries=folded)
    request = ask(span, anchor=None, span=True)
    return await summarise(deps.provider, squeezed(request, window) if window else request)


@dataclass(frozen=True, kw_only=True)
class Written:
    """What a summariser (or handoff) call wrote, with its cost."""

    text: str
    usage: Usage | None
    duration_ms: int

    def accounting(self, model: str) -> dict[str, Any]:
        return {
            "usage": self.usage.as_dict() if self.usage else None,
            "summariser": {
                "model": model,
                "duration_ms": self.duration_ms,
                "cache_read_tokens": self.usage.cached_tokens if self.usage else None,
                "cache_write_tokens": None,
            },
        }


async def summarise(provider: Provider, request: ModelRequest) -> Written:
    """One summary call, not streamed; an empty reply is a failure."""
    started = time.monotonic()
    response = await complete(provider, request)
    if not response.text.strip():
        raise ProviderError("the summariser returned no text", code="server_error")
    elapsed = round((time.monotonic() - started) * 1000)
    return Written(text=response.text.strip(), usage=response.usage, duration_ms=elapsed)


async def handoff(config: TurnConfig, deps: Deps) -> None:
    """`/handoff`: the agent writes the document; it is kept as a `handoff` notice, for a
    person to edit and start a new session from. It never enters the model's context."""
    from harness.loop import build_context

    context, _ = await build_context(config, deps)
    policy = policy_of(config, context)
    request = handoff_request(context, max(policy.summary_budget, 400), config.max_output_tokens)
    try:
        written = await summarise(deps.provider, request)
    except ProviderError as error:
        await say(config, deps, "handoff_failed", f"The handoff could not be written ({error}).")
        return
    await deps.store.append(
        config.session_id,
        kind="notice",
        content=written.text,
        data={"code": "handoff", **written.accounting(config.model)},
    )


NOTHING_TO_FOLD = "Nothing to compact yet: everything in context is recent history."


async def clear(
    config: TurnConfig,
    deps: Deps,
    policy: Policy,
    context: Context,
    entries: Sequence[LogEntry],
    tokens_before: int,
    reason: str,
) -> int | None:
    """Clear old tool outputs with a `clear` boundary that keeps the summary and cut.

    Returns the context's size after, or None when there was nothing to clear.
    """
    boundary = latest_boundary(entries)
    already = int(boundary.data.get("cleared_before", 0)) if boundary else 0
    cut_now = int(boundary.data.get("first_kept_seq", 0)) if boundary else 0
    visible = [e for e in entries if e.seq >= cut_now and e.kind != "boundary"]
    point = clear_point(visible, policy.recent_budget, already)
    if point is None:
        return None
    state = await deps.store.state(config.session_id)
    data: dict[str, Any] = {
        "first_kept_seq": cut_now or (visible[0].seq if visible else 1),
        "carried": durable(state),
        "trigger": "clear",
        "reason": reason,
        "instructions": None,
        "cleared_before": point,
        "tokens_before": tokens_before,
        "previous_boundary": boundary.seq if boundary else None,
        "usage": None,
    }
    summary = boundary.content if boundary else ""
    data["tokens_after"] = tokens_after(config, context, entries, summary, data)
    await deps.store.append(config.session_id, kind="boundary", content=summary, data=data)
    return int(data["tokens_after"])


def tokens_after(
    config: TurnConfig,
    context: Context,
    entries: Sequence[LogEntry],
    summary: str,
    data: dict[str, Any],
) -> int:
    """The next context's size, assembled with the boundary about to be appended."""
    seq = (entries[-1].seq if entries else 0) + 1
    planned = LogEntry(seq=seq, kind="boundary", content=summary, data=data)
    cut = int(data["first_kept_seq"])
    kept = [e for e in entries if e.seq >= cut and e.kind != "boundary"]
    after = assemble(
        system_prompt=config.system_prompt, tools=context.tools, entries=[*kept, planned]
    )
    return after.tokens


def anchor_text(entry: LogEntry) -> str:
    from harness.context import entry_message

    message = entry_message(entry)
    return message_text(message) if message is not None else entry.content


async def rebuilt(config: TurnConfig, deps: Deps) -> tuple[Context, Sequence[LogEntry]]:
    from harness.loop import build_context

    return await build_context(config, deps)


async def say(config: TurnConfig, deps: Deps, code: str, text: str, **extra: str) -> None:
    await deps.store.append(
        config.session_id, kind="notice", content=text, data={"code": code, **extra}
    )
