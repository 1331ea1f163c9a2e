"""Transcript values: log entries, model messages, stream events.

Every value is a frozen, keyword-only dataclass with a `kind`, so a `match` over a union is
exhaustive and ends in `assert_never`. The log entry mirrors the API's entry shape; model
messages are what a provider wire turns into its own JSON. Nothing here knows a wire.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

EntryKind = Literal[
    "user",
    "command",
    "answer",
    "assistant",
    "tool_result",
    "subagent_result",
    "boundary",
    "notice",
    "timer",
]
ENTRY_KINDS: tuple[EntryKind, ...] = (
    "user",
    "command",
    "answer",
    "assistant",
    "tool_result",
    "subagent_result",
    "boundary",
    "notice",
    "timer",
)


@dataclass(frozen=True, kw_only=True)
class LogEntry:
    """One record of a session's append-only log."""

    seq: int
    kind: EntryKind
    content: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)
    tokens: int | None = None
    author: str | None = None


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """A call the model asked for. `arguments` is the raw JSON text the model wrote."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, kw_only=True)
class ToolSpec:
    """What the model is told about a tool: its name, purpose and JSON-schema parameters."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    @functools.cached_property
    def json(self) -> str:
        """The spec as JSON, as the context shows and counts it: made once per spec."""
        fields = {"name": self.name, "description": self.description}
        return json.dumps(fields | {"parameters": self.parameters})


@dataclass(frozen=True, kw_only=True)
class Usage:
    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
        }


@dataclass(frozen=True, kw_only=True)
class SystemMessage:
    text: str
    kind: Literal["system"] = "system"


@dataclass(frozen=True, kw_only=True)
class UserMessage:
    text: str
    kind: Literal["user"] = "user"


@dataclass(frozen=True, kw_only=True)
class AssistantMessage:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str | None = None
    provider_details: Mapping[str, Any] | None = None
    kind: Literal["assistant"] = "assistant"


@dataclass(frozen=True, kw_only=True)
class ToolResultMessage:
    call_id: str
    name: str
    text: str
    is_error: bool = False
    kind: Literal["tool_result"] = "tool_result"


Message = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage


@dataclass(frozen=True, kw_only=True)
class ModelRequest:
    """One call to a model: the messages in order, the tools offered, the output cap."""

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_output_tokens: int | None = None


@dataclass(frozen=True, kw_only=True)
class ModelResponse:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str | None = None
    usage: Usage | None = None
    finish_reason: str | None = None
    provider_details: Mapping[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class TextDelta:
    text: str
    kind: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True, kw_only=True)
class ReasoningDelta:
    text: str
    kind: Literal["reasoning_delta"] = "reasoning_delta"


@dataclass(frozen=True, kw_only=True)
class ResponseDone:
    """The last event of every stream: the whole response, assembled."""

    response: ModelResponse
    kind: Literal["done"] = "done"


StreamEvent = TextDelta | ReasoningDelta | ResponseDone
