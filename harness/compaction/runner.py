"""Running a compaction: the summary call, the boundary entry, and the fallbacks.

Called by the turn loop before a model call (auto), at a turn boundary (`/compact`), or
when the provider says the context was too long (overflow); `handoff` and `fork_summary`
write the other two kinds of summary. Compaction is the harness's own action: it is not a
step, watchers see it as a `compacting` start and end rather than a stream, and its usage is
recorded on the boundary apart from the turns'. When the summary call fails (or writes
nothing, or runs far over its budget), a `notice` says so and the fallback clears old tool
outputs instead; the loop retries at the next turn boundary. Every figure is in the
session's counter: the cut, the budgets, what fits, `tokens_after`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from harness.compaction.boundary import Boundary, with_pinned
from harness.compaction.cut import clear_point, plan_cut, sizes_of
from harness.compaction.policy import Policy
from harness.compaction.prompts import (
    fits,
    handoff_request,
    request_tokens,
    squeezed,
    summary_request,
)
from harness.compaction.watched import Watched
from harness.context import (
    Context,
    assemble,
    entry_message,
    latest_boundary,
    message_text,
)
from harness.messages import LogEntry, ModelRequest, Usage
from harness.providers.base import Provider, ProviderError, complete
from harness.providers.overflow import read_overflow
from harness.runtime import Deps, SessionView, TurnConfig, read_view
from harness.state import durable
from harness.tokens import TokenCounter

Outcome = Literal["compacted", "cleared", "nothing", "failed"]
Why = Literal["auto", "manual", "overflow"]
OVER_BUDGET = 1.5  # a summary this far over its output cap was not written to it
SPAN_ATTEMPTS = 3
SQUEEZE_AGAIN = 0.85
NOTHING_TO_FOLD = "Nothing to compact yet: everything in context is recent history."


def budgets(view: SessionView) -> Policy:
    """The session's policy; with no window (a manual /compact), budgets follow the context."""
    if view.policy.window is not None:
        return view.policy
    return replace(view.policy, window=max(view.context.tokens, 1))


async def compact(
    config: TurnConfig,
    deps: Deps,
    view: SessionView,
    *,
    why: Why,
    tokens_before: int,
    instructions: str | None = None,
    said: set[str] | None = None,
) -> Outcome:
    policy = budgets(view)
    boundary = latest_boundary(view.entries)
    visible = kept_since(view.entries, boundary)
    keep = policy.recent_budget
    if view.policy.window is not None:
        keep = policy.cut_budget(fixed_tokens(view.context))
    cut = plan_cut(visible, keep, sizes_of(view.context))
    if cut is None:
        await say(config, deps, "nothing_to_fold", NOTHING_TO_FOLD, said=said)
        return "nothing"
    await deps.events.compacting(config.session_id, "start")
    try:
        if policy.clear_tool_results and why == "auto":
            cleared = await clear(config, deps, view, tokens_before, "auto")
            if cleared is not None and cleared < (policy.trigger_tokens or 0):
                await skills_notice(config, deps)
                return "cleared"
            view = await read_view(config, deps)
        try:
            written = await fold(config, deps, view, cut, instructions)
        except ProviderError as error:
            await fold_failed(config, deps, view, tokens_before, error, said)
            return "failed"
        await deps.store.append(
            config.session_id,
            kind="boundary",
            content=written.summary,
            data=folded_boundary(config, view, written, cut, why, tokens_before, instructions),
        )
        await skills_notice(config, deps)
        return "compacted"
    finally:
        await deps.events.compacting(config.session_id, "end")


async def skills_notice(config: TurnConfig, deps: Deps) -> None:
    """Name the loaded skills the new boundary could not attach again (over the skills
    budget, oldest first): they are never dropped silently."""
    dropped = (await read_view(config, deps)).context.skills_dropped
    if not dropped:
        return
    await say(
        config,
        deps,
        "skills_dropped",
        "The skills budget could not attach every loaded skill again after the summary: "
        f"{', '.join(dropped)} (the oldest) left out. The agent can load them again.",
        skills=list(dropped),
    )


def fixed_tokens(context: Context) -> int:
    """What no fold shrinks: the system prompt, tools, skills, memory and carried state."""
    fixed = ("system", "skills", "memory", "state")
    return sum(b.tokens for b in context.blocks if b.kind in fixed)


def kept_since(entries: Sequence[LogEntry], boundary: LogEntry | None) -> list[LogEntry]:
    cut_now = int(boundary.data.get("first_kept_seq", 0)) if boundary else 0
    return [e for e in entries if e.seq >= cut_now and e.kind != "boundary"]


def folded_boundary(
    config: TurnConfig,
    view: SessionView,
    written: Written,
    cut: int,
    why: Why,
    tokens_before: int,
    instructions: str | None,
) -> dict[str, Any]:
    previous = latest_boundary(view.entries)
    visible = kept_since(view.entries, previous)
    boundary = Boundary(
        summary=written.summary,
        first_kept_seq=cut,
        carried=durable(view.state),
        trigger="manual" if why == "manual" else "auto",
        reason=why,
        instructions=instructions,
        pinned=written.pinned,
        tokens_before=tokens_before,
        covers=(visible[0].seq, cut - 1),
        previous_boundary=previous.seq if previous else None,
        **written.accounting(config.model),
    )
    return replace(boundary, tokens_after=tokens_after(view, boundary)).to_data()


async def fold_failed(
    config: TurnConfig,
    deps: Deps,
    view: SessionView,
    tokens_before: int,
    error: ProviderError,
    said: set[str] | None,
) -> None:
    cleared = await clear(config, deps, view, tokens_before, "fallback")
    await say(
        config,
        deps,
        "compaction_failed",
        f"Compaction failed ({error}). "
        + ("Old tool outputs were cleared instead. " if cleared is not None else "")
        + "Compaction is tried again at the next turn boundary.",
        said=said,
        error=error.code,
    )


@dataclass(frozen=True, kw_only=True)
class Written:
    """What a summariser (or handoff) call wrote, with its cost."""

    text: str
    usage: Usage | None
    duration_ms: int
    pinned: str | None = None

    @property
    def summary(self) -> str:
        return with_pinned(self.pinned, self.text)

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


async def fold(
    config: TurnConfig, deps: Deps, view: SessionView, cut: int, instructions: str | None
) -> Written:
    """The summary call. First the current context plus the instruction, which shares the
    last call's prefix; when that cannot fit the window (a turn that jumped far past the
    trigger) or the provider says it is too long, only the span being folded, its longest
    messages cut in the middle if even that is too big."""
    boundary = latest_boundary(view.entries)
    pinned = boundary.data.get("pinned") if boundary else None
    window = view.policy.window
    provider = Watched(deps.provider, deps.events, config.session_id)
    ask = functools.partial(
        summary_request,
        has_previous=bool(boundary and boundary.content.strip()),
        budget=budgets(view).summary_budget,
        instructions=instructions,
        max_output_tokens=config.max_output_tokens,
        pinned=pinned,
    )
    request = ask(view.context, anchor=anchor_text(next(e for e in view.entries if e.seq == cut)))
    if fits(request, window, view.counter):
        try:
            return await summarise(provider, request, view.counter, pinned)
        except ProviderError as error:
            if error.code != "context_length_exceeded":
                raise
    folded = [e for e in view.entries if e.seq < cut or e is boundary]
    span = assemble(
        system_prompt=config.system_prompt,
        tools=view.context.tools,
        entries=folded,
        counter=view.counter,
        entry_limit=view.policy.entry_limit,
        memory=view.memory.text,
        skills=view.skills,
        skills_budget=view.policy.skills_budget,
    )
    return await fold_span(provider, ask(span, anchor=None, span=True), view, pinned)


async def fold_span(
    provider: Provider, request: ModelRequest, view: SessionView, pinned: str | None
) -> Written:
    """The span's summary, squeezed to fit. A server that still finds it too long says by how
    much (or not): squeeze to what its count implies, twice at most."""
    target = view.policy.window
    for attempt in range(SPAN_ATTEMPTS):
        sent = squeezed(request, target, view.counter) if target is not None else request
        try:
            return await summarise(provider, sent, view.counter, pinned)
        except ProviderError as error:
            if error.code != "context_length_exceeded" or target is None:
                raise
            if attempt == SPAN_ATTEMPTS - 1:
                raise
            target = tighter(target, sent, view.counter, read_overflow(str(error)).prompt)
    raise AssertionError("unreachable")


def tighter(target: int, sent: ModelRequest, counter: TokenCounter, reported: int | None) -> int:
    """The next squeeze's target: scaled by how far our count fell short of the server's."""
    ours = request_tokens(sent, counter) - (sent.max_output_tokens or 0)
    shortfall = ours / reported if reported and reported > ours else SQUEEZE_AGAIN
    return int(target * min(shortfall, SQUEEZE_AGAIN))


async def summarise(
    provider: Provider, request: ModelRequest, counter: TokenCounter, pinned: str | None = None
) -> Written:
    """One summary call, not streamed. Empty text, or text far over the output cap the
    request set, is a failure: the caller's fallback runs and nothing bad is stored."""
    started = time.monotonic()
    response = await complete(provider, request)
    text = response.text.strip()
    if not text:
        raise ProviderError("the summariser returned no text", code="server_error")
    cap = request.max_output_tokens or 0
    if cap and counter.count(text) > cap * OVER_BUDGET:
        raise ProviderError(
            f"the summary ran to {counter.count(text)} tokens, over its {cap}-token budget",
            code="server_error",
        )
    elapsed = round((time.monotonic() - started) * 1000)
    return Written(text=text, usage=response.usage, duration_ms=elapsed, pinned=pinned)


async def handoff(config: TurnConfig, deps: Deps) -> None:
    """`/handoff`: the agent writes the document; it is kept as a `handoff` notice, for a
    person to edit and start a new session from. It never enters the model's context."""
    view = await read_view(config, deps)
    budget = max(budgets(view).summary_budget, 400)
    request = handoff_request(view.context, budget, config.max_output_tokens)
    if view.policy.window is not None:
        request = squeezed(request, view.policy.window, view.counter)
    try:
        written = await summarise(deps.provider, request, view.counter)
    except ProviderError as error:
        await say(config, deps, "handoff_failed", f"The handoff could not be written ({error}).")
        return
    await deps.store.append(
        config.session_id,
        kind="notice",
        content=written.text,
        data={"code": "handoff", **written.accounting(config.model)},
    )


async def fork_summary(
    config: TurnConfig, deps: Deps, view: SessionView
) -> tuple[str, dict[str, Any]]:
    """A fork's summary of its parent's `view`: the text and what the boundary records.

    Without a summariser the fork starts from the previous summary and the newest messages.
    """
    previous = latest_boundary(view.entries)
    pinned = previous.data.get("pinned") if previous else None
    budget = budgets(view).summary_budget
    request = summary_request(
        view.context,
        anchor=None,
        has_previous=bool(previous and previous.content.strip()),
        budget=budget,
        instructions=None,
        max_output_tokens=config.max_output_tokens,
        pinned=pinned,
    )
    if view.policy.window is not None:
        request = squeezed(request, view.policy.window, view.counter)
    extra: dict[str, Any] = {"tokens_before": view.context.tokens, "pinned": pinned}
    try:
        written = await summarise(deps.provider, request, view.counter, pinned)
    except ProviderError as error:
        return fork_fallback(view.context, previous, budget), {**extra, "failed": str(error)}
    return written.summary, {**extra, **written.accounting(config.model)}


def fork_fallback(context: Context, previous: LogEntry | None, budget: int) -> str:
    """Without a summariser: the previous summary and the newest messages that fit."""
    room = max(budget, 200) * 4
    lines: list[str] = []
    for message in reversed(context.messages):
        text = message_text(message)
        if message.kind == "system" or not text or room - len(text) < 0:
            continue
        lines.insert(0, f"{message.kind}: {text}")
        room -= len(text)
    head = previous.content if previous else ""
    return (head + "\n\n[The last messages, verbatim:]\n" + "\n".join(lines)).strip()


async def clear(
    config: TurnConfig, deps: Deps, view: SessionView, tokens_before: int, reason: str
) -> int | None:
    """Clear old tool outputs with a `clear` boundary that keeps the summary and cut.

    Returns the context's size after, or None when there was nothing to clear.
    """
    previous = latest_boundary(view.entries)
    already = int(previous.data.get("cleared_before", 0)) if previous else 0
    visible = kept_since(view.entries, previous)
    point = clear_point(visible, budgets(view).recent_budget, already, sizes_of(view.context))
    if point is None:
        return None
    boundary = Boundary(
        summary=previous.content if previous else "",
        first_kept_seq=int(previous.data.get("first_kept_seq", 0)) if previous else 0,
        carried=durable(view.state),
        trigger="clear",
        reason=reason,
        pinned=previous.data.get("pinned") if previous else None,
        cleared_before=point,
        tokens_before=tokens_before,
        previous_boundary=previous.seq if previous else None,
    )
    if not boundary.first_kept_seq:
        boundary = replace(boundary, first_kept_seq=visible[0].seq if visible else 1)
    boundary = replace(boundary, tokens_after=tokens_after(view, boundary))
    await deps.store.append(
        config.session_id, kind="boundary", content=boundary.summary, data=boundary.to_data()
    )
    return boundary.tokens_after


def tokens_after(view: SessionView, boundary: Boundary) -> int:
    """The next context's size, assembled with the boundary about to be appended."""
    seq = (view.entries[-1].seq if view.entries else 0) + 1
    kept = [e for e in view.entries if e.seq >= boundary.first_kept_seq and e.kind != "boundary"]
    prompt = (b.text for b in view.context.blocks if b.kind == "system" and b.role == "system")
    after = assemble(
        system_prompt=next(prompt, ""),
        tools=view.context.tools,
        entries=[*kept, boundary.entry(seq)],
        counter=view.counter,
        entry_limit=view.policy.entry_limit,
        memory=view.memory.text,
        skills=view.skills,
        skills_budget=view.policy.skills_budget,
    )
    return after.tokens


def anchor_text(entry: LogEntry) -> str:
    message = entry_message(entry)
    return message_text(message) if message is not None else entry.content


async def say(
    config: TurnConfig,
    deps: Deps,
    code: str,
    text: str,
    *,
    said: set[str] | None = None,
    **extra: Any,
) -> None:
    """A notice for the people watching; `said` keeps one of each code per turn."""
    if said is not None:
        if code in said:
            return
        said.add(code)
    await deps.store.append(
        config.session_id, kind="notice", content=text, data={"code": code, **extra}
    )
