"""The turn: model call → `assistant` entry → tool calls → `tool_result` entries → again.

A turn ends with a reply that calls no tool, after a step whose tool asked the user a
question (the session then waits for the answer), or at the session's step limit. Everything it
produces is appended to the log as it happens, so a crash loses at most the reply in flight.
Nothing inside a turn may wedge the session: a provider failure becomes a `notice` entry, a
tool that raises or is unknown, or arguments that are not a JSON object, become an error
`tool_result`, and every call always gets its result.

`drive` runs turns back to back while the store reports queued input at each turn boundary;
the store owns the lease that makes it one turn at a time per session.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from harness.compaction.runner import compact, handoff, say
from harness.context import Context, entry_message
from harness.messages import (
    LogEntry,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCall,
)
from harness.ports import AppendsLast
from harness.prompt_count import trigger_view
from harness.providers.base import ProviderError
from harness.providers.overflow import read_overflow
from harness.runtime import Deps, SessionView, TurnConfig, read_view
from harness.tokens import estimate_tokens
from harness.tools.base import Tool, ToolContext, ToolOutcome

log = logging.getLogger(__name__)
SAFE_MARGIN = 0.8  # a server that names no limit took less than this share of what failed


@dataclass
class TurnFlags:
    """What one turn remembers between its model calls."""

    compaction_failed: bool = False
    overflow_retried: bool = False
    said: set[str] = field(default_factory=set)  # notice codes already given this turn


TurnEnd = Literal["reply", "question", "compacted", "max_steps", "provider_error"]


async def drive(config: TurnConfig, deps: Deps) -> None:
    """Run the turn for the input already in the log, then one per batch of queued input."""
    while True:
        await run_turn(config, deps)
        if not await deps.store.next_turn(config.session_id):
            return


async def run_turn(config: TurnConfig, deps: Deps) -> TurnEnd:
    flags = TurnFlags()
    # The first call's view, read (and the lease renewed) once: it also tells what is pending.
    view: SessionView | None = await read_view(config, deps, renew=True)
    assert view is not None
    state = view.state
    if state.pending_handoff is not None:
        await handoff(config, deps)
        view = await read_view(config, deps)
        if not owes_reply(view.entries) and state.pending_compact is None:
            return "compacted"
    if state.pending_compact is not None:
        await compact(
            config,
            deps,
            view,
            why="manual",
            tokens_before=view.context.tokens,
            instructions=state.pending_compact.get("instructions"),
            said=flags.said,
        )
        view = await read_view(config, deps)
        if not owes_reply(view.entries):
            return "compacted"
    if state.pending_handoff is not None or state.pending_compact is not None:
        view = None  # a summary call went by: the next call renews the lease as it reads
    for _ in range(config.max_steps):
        called = await call_model(config, deps, flags, view)
        view = None
        if called is None:
            return "provider_error"
        response, seq = called
        if not response.tool_calls:
            return "reply"
        ends_turn = False
        for call in response.tool_calls:
            ends_turn = await run_tool(call, config, deps, seq) or ends_turn
        if ends_turn:
            return "question"
    await notice(config, deps, "max_steps", f"The turn stopped after {config.max_steps} steps.")
    return "max_steps"


def owes_reply(entries: Sequence[LogEntry]) -> bool:
    """Whether the last message in context is one the model has not answered yet."""
    for entry in reversed(entries):
        message = entry_message(entry)
        if message is not None:
            return message.kind != "assistant"
    return False


async def auto_compacted(
    config: TurnConfig, deps: Deps, flags: TurnFlags, view: SessionView | None = None
) -> SessionView:
    """The session for the next call (`view` when the caller just read it), compacted first
    when the trigger is reached. The lease is renewed as it is read: a call (or a
    compaction) may outlast what was left of it."""
    if view is None:
        view = await read_view(config, deps, renew=True)
    policy = view.policy
    if not policy.armed or flags.compaction_failed or policy.trigger_tokens is None:
        return view
    view = await trigger_view(config, deps, view)
    tokens = view.context.tokens
    if tokens < policy.trigger_tokens:
        return view
    outcome = await compact(config, deps, view, why="auto", tokens_before=tokens, said=flags.said)
    flags.compaction_failed = outcome in ("failed", "nothing")  # not again this turn
    return await read_view(config, deps)


async def call_model(
    config: TurnConfig, deps: Deps, flags: TurnFlags, view: SessionView | None = None
) -> tuple[ModelResponse, int] | None:
    """One model call, streamed to watchers; the reply is appended as an `assistant` entry,
    whose seq comes back with it (the calls it makes are made at that seq). `view` is the
    session just read with the lease renewed, when the caller has it."""
    view = await auto_compacted(config, deps, flags, view)
    await shortened_notice(config, deps, view)
    request = view.context.request(config.max_output_tokens)
    try:
        response = await stream_response(request, config, deps)
    except ProviderError as error:
        if error.code == "context_length_exceeded" and not flags.overflow_retried:
            flags.overflow_retried = True
            if await overflowed(config, deps, view, error, flags):
                return await call_model(config, deps, flags)
        await notice(
            config, deps, "provider_error", f"The model call failed: {error}", error=error.code
        )
        return None
    # A reply that calls no tool ends the turn: a store that can reaches the boundary with it.
    store = deps.store
    last = isinstance(store, AppendsLast) and not response.tool_calls
    append = store.append_last if last and isinstance(store, AppendsLast) else store.append
    entry = await append(
        config.session_id,
        kind="assistant",
        content=response.text,
        data=assistant_data(response, view.context, config),
        tokens=response.usage.output_tokens if response.usage else estimate_tokens(response.text),
    )
    return response, entry.seq


async def shortened_notice(config: TurnConfig, deps: Deps, view: SessionView) -> None:
    """Say once which inputs the model sees only as head and tail."""
    new = [seq for seq in view.context.shortened if seq > view.state.shortened_noticed]
    if not new:
        return
    limit = view.policy.entry_limit
    listed = ", ".join(str(seq) for seq in new)
    await notice(
        config,
        deps,
        "input_shortened",
        f"Entry {listed} is larger than the model can take at once"
        + (f" ({limit:,} tokens an entry)" if limit else "")
        + ": it sees the head and the tail and can read the rest with read_entry. "
        "The whole text is kept in the log.",
        seqs=new,
    )


async def stream_response(request: ModelRequest, config: TurnConfig, deps: Deps) -> ModelResponse:
    await deps.events.stream_start(config.session_id)
    try:
        async for event in deps.provider.stream(request):
            match event:
                case TextDelta(text=text):
                    await deps.events.delta(config.session_id, text)
                case ReasoningDelta():
                    pass
                case ResponseDone(response=response):
                    return response
    finally:
        await deps.events.stream_end(config.session_id)
    raise ProviderError("the model's stream ended without a response", code="server_error")


async def overflowed(
    config: TurnConfig, deps: Deps, view: SessionView, error: ProviderError, flags: TurnFlags
) -> bool:
    """The provider said the context was too long: learn the window it really accepts,
    compact to fit it at once, and say whether to retry the call."""
    window = view.policy.window
    if window is None:
        await notice(
            config,
            deps,
            "context_overflow",
            "The model says the context is too long, and its card declares no context window, "
            "so nothing compacts automatically: run /compact, or declare the window.",
        )
        return False
    sent = view.context.tokens + (config.max_output_tokens or 0)
    figures = read_overflow(str(error))
    learned = min(window, figures.limit or int(min(window, sent) * SAFE_MARGIN))
    await say(
        config,
        deps,
        "window_learned",
        window_text(learned, view.policy.declared_window or window, figures.prompt or sent),
        effective_window=learned,
        declared_window=view.policy.declared_window or window,
        reported_prompt=figures.prompt,
        prompt_estimate=view.context.estimate,
    )
    view = await read_view(config, deps)
    await compact(
        config,
        deps,
        view,
        why="overflow",
        tokens_before=figures.prompt or sent,
        said=flags.said,
    )
    return True


def window_text(learned: int, declared: int, refused: int) -> str:
    said = f"The server refused a prompt of about {refused:,} tokens as too long"
    if learned >= declared:
        return f"{said}; compacting to fit its {declared:,}-token window."
    return (
        f"{said}. It accepts {learned:,} (the card says {declared:,}): this session keeps to "
        f"{learned:,} from now on and compacts to fit."
    )


def assistant_data(response: ModelResponse, context: Context, config: TurnConfig) -> dict[str, Any]:
    data: dict[str, Any] = {
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls
        ],
        "model": config.model,
        "prompt_tokens_estimate": context.estimate,  # what calibration is measured against
        "prompt_tokens_counted": context.tokens,
    }
    if response.usage is not None:
        data["usage"] = response.usage.as_dict()
    if response.reasoning:
        data["reasoning"] = response.reasoning
    if response.provider_details:
        data["provider_details"] = dict(response.provider_details)
    if response.finish_reason:
        data["finish_reason"] = response.finish_reason
    return data


async def run_tool(call: ToolCall, config: TurnConfig, deps: Deps, seq: int) -> bool:
    """Run one call (made by the assistant entry `seq`) and append its result; True when the
    tool ends the turn."""
    context = ToolContext(
        session_id=config.session_id,
        state=await deps.store.state(config.session_id),
        now=datetime.now(UTC),
        log=deps.store,
        memory=deps.memory,
        call_seq=seq,
        skills=deps.skills,
        subagents=deps.subagents,
        subagent_limits=config.subagent_limits,
    )
    outcome = await tool_outcome(call, context, deps.tools)
    data = {**outcome.data, "call_id": call.id, "name": call.name, "is_error": outcome.is_error}
    await deps.store.append(config.session_id, kind="tool_result", content=outcome.text, data=data)
    return outcome.ends_turn and not outcome.is_error


async def tool_outcome(
    call: ToolCall, context: ToolContext, tools: Mapping[str, Tool]
) -> ToolOutcome:
    tool = tools.get(call.name)
    if tool is None:
        return ToolOutcome(
            text=f"Unknown tool {call.name!r}. Known: {known(tools)}.", is_error=True
        )
    arguments = parse_arguments(call.arguments)
    if arguments is None:
        return ToolOutcome(text="The arguments are not a JSON object.", is_error=True)
    try:
        return await tool.run(arguments, context)
    except Exception as error:  # a tool's failure is the model's to see, never a crash
        return ToolOutcome(text=f"The tool failed: {type(error).__name__}: {error}", is_error=True)


def parse_arguments(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def known(tools: Mapping[str, Tool]) -> str:
    names: Sequence[str] = sorted(tools)
    return ", ".join(names) or "none"


async def notice(config: TurnConfig, deps: Deps, code: str, text: str, **extra: Any) -> None:
    await deps.store.append(
        config.session_id, kind="notice", content=text, data={"code": code, **extra}
    )
