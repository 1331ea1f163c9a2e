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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from harness.context import Context, assemble
from harness.messages import (
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCall,
)
from harness.ports import EventSink, TranscriptStore
from harness.providers.base import Provider, ProviderError
from harness.tokens import estimate_tokens
from harness.tools.base import Tool, ToolContext, ToolOutcome


@dataclass(frozen=True, kw_only=True)
class TurnConfig:
    session_id: int
    system_prompt: str
    max_steps: int
    max_output_tokens: int | None
    model: str


@dataclass(frozen=True, kw_only=True)
class Deps:
    store: TranscriptStore
    events: EventSink
    provider: Provider
    tools: Mapping[str, Tool]


TurnEnd = Literal["reply", "question", "max_steps", "provider_error"]


async def drive(config: TurnConfig, deps: Deps) -> None:
    """Run the turn for the input already in the log, then one per batch of queued input."""
    while True:
        await run_turn(config, deps)
        if not await deps.store.next_turn(config.session_id):
            return


async def run_turn(config: TurnConfig, deps: Deps) -> TurnEnd:
    for _ in range(config.max_steps):
        await deps.store.keep_alive(config.session_id)
        response = await call_model(config, deps)
        if response is None:
            return "provider_error"
        if not response.tool_calls:
            return "reply"
        ends_turn = False
        for call in response.tool_calls:
            ends_turn = await run_tool(call, config, deps) or ends_turn
        if ends_turn:
            return "question"
    await notice(config, deps, "max_steps", f"The turn stopped after {config.max_steps} steps.")
    return "max_steps"


async def build_context(config: TurnConfig, deps: Deps) -> Context:
    entries = await deps.store.context_entries(config.session_id)
    specs = [tool.spec for tool in deps.tools.values()] if deps.provider.capabilities.tools else []
    return assemble(system_prompt=config.system_prompt, tools=specs, entries=entries)


async def call_model(config: TurnConfig, deps: Deps) -> ModelResponse | None:
    """One model call, streamed to watchers; the reply is appended as an `assistant` entry."""
    context = await build_context(config, deps)
    request = context.request(config.max_output_tokens)
    try:
        response = await stream_response(request, config, deps)
    except ProviderError as error:
        await notice(
            config, deps, "provider_error", f"The model call failed: {error}", error=error.code
        )
        return None
    await deps.store.append(
        config.session_id,
        kind="assistant",
        content=response.text,
        data=assistant_data(response, context, config),
        tokens=response.usage.output_tokens if response.usage else estimate_tokens(response.text),
    )
    return response


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


def assistant_data(response: ModelResponse, context: Context, config: TurnConfig) -> dict[str, Any]:
    data: dict[str, Any] = {
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls
        ],
        "model": config.model,
        "prompt_tokens_estimate": context.tokens,
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


async def run_tool(call: ToolCall, config: TurnConfig, deps: Deps) -> bool:
    """Run one call and append its result; True when the tool ends the turn."""
    context = ToolContext(
        session_id=config.session_id,
        state=await deps.store.state(config.session_id),
        now=datetime.now(UTC),
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


async def notice(config: TurnConfig, deps: Deps, code: str, text: str, **extra: str) -> None:
    await deps.store.append(
        config.session_id, kind="notice", content=text, data={"code": code, **extra}
    )
