"""Request build time at a 100k-token context, per wire: printed, never asserted (a figure).

The context is a long tool loop with reasoning on every assistant message (and each wire's
round-trip details), about 400,000 characters, so about 100k tokens by chars/4. Timed: the
wire's own request builder, and the same followed by the JSON encoding the SDK does."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import pytest

from harness.messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from harness.providers.anthropic import build as build_anthropic
from harness.providers.base import CardConfig
from harness.providers.openai_chat import messages as chat_messages
from harness.providers.openai_responses import build as build_responses

pytestmark = pytest.mark.contract

ROUNDS = 100
TOOL = ToolSpec(name="read", description="Read a file.", parameters={"type": "object"})


def long_context(model: str) -> ModelRequest:
    messages: list[Message] = [SystemMessage(text="You are careful. " * 120)]
    for n in range(ROUNDS):
        call = ToolCall(id=f"call_{n}", name="read", arguments=json.dumps({"path": f"f{n}.py"}))
        details = {
            "openai_responses": {"model": model, "output": [
                {"type": "reasoning", "id": f"rs_{n}", "summary": [], "encrypted_content": "e" * 800},
                {"type": "function_call", "id": f"fc_{n}", "call_id": call.id}]},
            "anthropic": {"model": model, "content": [
                {"type": "thinking", "thinking": "t" * 400, "signature": "s" * 400},
                {"type": "tool_use", "id": call.id}]},
        }  # fmt: skip
        messages += [
            UserMessage(text=f"Step {n}: " + "please look at the next file. " * 40),
            AssistantMessage(
                text="Reading it.",
                tool_calls=(call,),
                reasoning="r" * 400,
                provider_details=details,
            ),  # fmt: skip
            ToolResultMessage(call_id=call.id, name="read", text="x = 1\n" * 400),
        ]
    return ModelRequest(messages=tuple(messages), tools=(TOOL,), max_output_tokens=1000)


def timed(build: Callable[[], Any]) -> tuple[float, float]:
    """Median milliseconds: the builder alone, and the builder then `json.dumps`."""
    alone, encoded = [], []
    for _ in range(15):
        began = time.perf_counter()
        body = build()
        built = time.perf_counter()
        json.dumps(body)
        alone.append(built - began)
        encoded.append(time.perf_counter() - began)
    return statistics.median(alone) * 1000, statistics.median(encoded) * 1000


def test_request_build_time_at_100k_tokens_per_wire() -> None:
    model = "m"
    request = long_context(model)
    responses = build_responses(CardConfig(wire="openai_responses", model=model), {})
    anthropic = build_anthropic(CardConfig(wire="anthropic", model=model), {})
    wires = {
        "openai_chat (tool_turns)": lambda: chat_messages(request.messages, "tool_turns"),
        "openai_responses": lambda: responses.body(request),
        "anthropic": lambda: anthropic.body(request),
    }
    print(f"\ncontext: {len(request.messages)} messages")
    for wire, build in wires.items():
        alone, encoded = timed(build)
        tokens = len(json.dumps(build())) // 4
        print(f"{wire}: ~{tokens:,} tokens sent (chars/4): build {alone:.2f} ms, "
              f"build + JSON {encoded:.2f} ms")  # fmt: skip
