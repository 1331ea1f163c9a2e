"""The `anthropic` wire: Anthropic's Messages API through the official `anthropic` SDK.

The request's shape is `anthropic_request`'s. Every message is a list of blocks, so a message
is the same bytes whichever position it has.

Prompt caching: two `cache_control` breakpoints, one on the system block (tools and system
are the stable head) and one on the last block of the request. The next turn, and the
compaction request (the same context plus one instruction), extend that request, so the API
finds the previous breakpoint's prefix within its look-back and reads it from the cache.

Thinking blocks come back with their signatures; they are kept in `provider_details`, in
their place among the reply's blocks, and replayed verbatim on the assistant turns of the
current tool loop (the assistant messages after the last user message), as the API requires,
and only to the model that wrote them. The card's `thinking_budget` turns extended thinking on
(`thinking: {"type": "enabled", "budget_tokens": N}`) for every call whose output limit
exceeds the budget, as the API requires; a call with a smaller limit (a probe) thinks not.
Usage: the API reports uncached input, cache reads and
cache writes apart; the prompt is their sum and the cached part the reads.

One retry mechanism, as in `openai_chat`: `with_retries` wraps only the opening of the
stream (honouring `retry-after`); a stream that ends before `message_stop` is a
`ProviderError` and no half reply is returned. The body goes as JSON bytes through the SDK's
low-level `post` (see `openai_chat`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import weakref
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx
from anthropic import AsyncAnthropic, AsyncStream
from anthropic.types import (
    InputJSONDelta,
    MessageTokensCount,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
    RawMessageStreamEvent,
    RedactedThinkingBlock,
    SignatureDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
)
from anthropic.types import Message as SdkMessage
from anthropic.types import TextBlock as SdkTextBlock
from anthropic.types import TextDelta as SdkTextDelta

from harness.messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    SystemMessage,
    TextDelta,
    ToolCall,
    Usage,
)
from harness.providers.anthropic_request import (
    CACHE,
    DETAILS,
    Block,
    message_blocks,
    replayed,
    request_messages,
    tool_param,
)
from harness.providers.base import (
    Capabilities,
    CardConfig,
    Opened,
    ProviderError,
    RetryPolicy,
    events_of,
    first_event,
    retry_after,
    sane_count,
    usage_checked,
    with_retries,
)
from harness.providers.encoding import Pieces, array, dumps, obj, with_field
from harness.providers.guard import ConnectCheck, UrlsOnce, client_of_loop, guarded
from harness.providers.openai_chat import CUT, NO_API_KEY, _said, _status_error
from harness.tokens import ESTIMATE, TokenCounter

WIRE = "anthropic"
DEFAULT_TIMEOUT = 120.0
STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls",
                "max_tokens": "length"}  # fmt: skip
# An error event inside a stream arrives with HTTP 200: its type names the status it stands for.
ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}

Events = AsyncStream[RawMessageStreamEvent]


def build(card: CardConfig, options: dict[str, Any]) -> AnthropicProvider:
    return AnthropicProvider(
        card=card,
        timeout=float(options.get("timeout", DEFAULT_TIMEOUT)),
        retry=options.get("retry") or RetryPolicy(),
        connect_check=options.get("connect_check"),
        capabilities=Capabilities(
            tools=True,
            streaming_usage=True,
            reasoning_replay=True,
            counts_prompt=bool(options.get("count_tokens", True)),
        ),
    )


@dataclass(kw_only=True, eq=False)
class AnthropicProvider:
    card: CardConfig
    timeout: float = DEFAULT_TIMEOUT
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    connect_check: ConnectCheck | None = None
    capabilities: Capabilities = Capabilities(
        tools=True, streaming_usage=True, reasoning_replay=True
    )
    # No local tokenizer for Claude: the estimate, which the session calibrates on usage and,
    # near the compaction trigger, on the count endpoint (`harness.prompt_count`).
    counter: TokenCounter = ESTIMATE
    _clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncAnthropic] = field(
        default_factory=weakref.WeakKeyDictionary, repr=False, compare=False
    )
    _pieces: Pieces = field(default_factory=Pieces, repr=False, compare=False)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        opened = await with_retries(lambda: self._open(request), self.retry)
        assembly = _Assembly(model=self.card.model)
        try:
            async for event in events_of(opened, _translated):
                for out in assembly.feed(event):
                    yield out
        finally:
            await opened.stream.close()
        if not assembly.finished:
            raise ProviderError(CUT, code="server_error", retryable=True)
        yield ResponseDone(response=assembly.response())

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The request as plain JSON values: what `encoded` sends, built without the cache."""
        system, messages = request_messages(request.messages, self.card.model)
        if messages:
            messages[-1]["content"][-1]["cache_control"] = CACHE
        return self._fields(request, system, messages)

    def encoded(self, request: ModelRequest) -> bytes:
        """`body` as the bytes sent, each message's blocks encoded once while in context."""
        system = [{"type": "text", "text": m.text} for m in request.messages
                  if isinstance(m, SystemMessage) and m.text]  # fmt: skip
        turns: list[tuple[str, list[bytes]]] = []
        pairs = [(m, r) for m, r in replayed(request.messages) if not isinstance(m, SystemMessage)]
        each = self._pieces.each([m for m, _ in pairs], [r for _, r in pairs], self._blocks_of)  # type: ignore[arg-type]
        for (message, _), blocks in zip(pairs, each, strict=True):
            role = "assistant" if isinstance(message, AssistantMessage) else "user"
            if not blocks:
                continue
            if turns and turns[-1][0] == role:
                turns[-1][1].extend(blocks)
            else:
                turns.append((role, list(blocks)))
        if turns:
            last = turns[-1][1]
            last[-1] = with_field(last[-1], "cache_control", CACHE)
        encoded = [obj([("role", role), ("content", array(blocks))]) for role, blocks in turns]
        fields = self._fields(request, system, array(encoded))
        if "tools" in fields:  # the last tool carries the cache mark when there is no system
            key = bool(system)
            fields["tools"] = self._pieces.listed(request.tools, key, fields["tools"])
        return obj(fields.items())

    def _blocks_of(self, message: Message, replay: bool) -> tuple[bytes, ...]:
        replay = replay and isinstance(message, AssistantMessage) and bool(message.provider_details)
        model = self.card.model
        make = lambda: tuple(dumps(b) for b in message_blocks(message, model, replay))  # noqa: E731
        return self._pieces.get(message, replay, make)

    def _fields(self, request: ModelRequest, system: list[Block], messages: Any) -> dict[str, Any]:
        tools = [tool_param(spec) for spec in request.tools]
        if system:
            system[-1]["cache_control"] = CACHE
        elif tools:
            tools[-1]["cache_control"] = CACHE
        body: dict[str, Any] = {
            "model": self.card.model,
            "max_tokens": request.max_output_tokens or self.card.max_output_tokens,
            "messages": messages,
            "stream": True,
        }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = tools
        budget = self.card.thinking_budget
        if budget and body["max_tokens"] > budget:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        return body

    async def count_tokens(self, request: ModelRequest) -> int:
        """The prompt's size by the API's own count endpoint (a call, not free)."""
        body = self.body(request)
        params = {k: body[k] for k in ("model", "messages", "system", "tools") if k in body}
        with _translated():
            counted = await self._client().post(
                "/v1/messages/count_tokens", content=dumps(params), cast_to=MessageTokensCount
            )
        tokens = sane_count(counted.input_tokens)
        if tokens is None:
            raise ProviderError("the token count was not a count", code="server_error")
        return tokens

    async def _open(self, request: ModelRequest) -> Opened[RawMessageStreamEvent]:
        with _translated():
            stream = await self._client().post(
                "/v1/messages",
                content=self.encoded(request),
                cast_to=SdkMessage,
                stream=True,
                stream_cls=Events,
            )
        return await first_event(stream, _translated)

    def prepare(self) -> None:
        """Build what this loop's first call would (the SDK client), ahead of it."""
        self._client()

    def _client(self) -> AsyncAnthropic:
        return client_of_loop(
            self._clients,
            lambda: AnthropicClient(
                api_key=self.card.api_key or NO_API_KEY,
                base_url=self.card.base_url,
                timeout=self.timeout,
                max_retries=0,
                http_client=guarded(self.connect_check, self.timeout),
            ),
        )


class AnthropicClient(UrlsOnce, AsyncAnthropic):
    """The SDK's client, merging each path with the base URL once."""


# Response: events into deltas, blocks into a whole response.


@dataclass(kw_only=True)
class _Part:
    """One content block as it streams."""

    block: Block
    text: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class _Tokens:
    input: object = None
    cache_read: object = 0
    cache_write: object = 0
    output: object = None

    def update(self, usage: Any) -> None:
        for name, attribute in (("input", "input_tokens"), ("output", "output_tokens"),
                                ("cache_read", "cache_read_input_tokens"),
                                ("cache_write", "cache_creation_input_tokens")):  # fmt: skip
            value = getattr(usage, attribute, None)
            if value is not None:
                setattr(self, name, value)

    def usage(self) -> Usage | None:
        if self.input is None and self.output is None:
            return None
        parts = (self.input, self.cache_read or 0, self.cache_write or 0)
        counts = [sane_count(part) for part in parts]
        prompt: object = sum(c for c in counts if c is not None) if None not in counts else -1
        return usage_checked(prompt, self.output, self.cache_read or 0)


@dataclass(kw_only=True)
class _Assembly:
    """A builder, so mutable: the stream's blocks gathered until `message_stop`."""

    model: str
    parts: dict[int, _Part] = field(default_factory=dict)
    tokens: _Tokens = field(default_factory=_Tokens)
    stop_reason: str | None = None
    finished: bool = False

    def feed(self, event: RawMessageStreamEvent) -> list[StreamEvent]:
        match event:
            case RawMessageStartEvent(message=message):
                self.tokens.update(message.usage)
            case RawContentBlockStartEvent(index=index, content_block=block):
                self.parts[index] = _Part(block=_started(block))
            case RawContentBlockDeltaEvent(index=index, delta=delta):
                return self._delta(index, delta)
            case RawContentBlockStopEvent():
                pass
            case RawMessageDeltaEvent(delta=delta, usage=usage):
                self.stop_reason = delta.stop_reason or self.stop_reason
                self.tokens.update(usage)
            case RawMessageStopEvent():
                self.finished = True
        return []

    def _delta(self, index: int, delta: Any) -> list[StreamEvent]:
        part = self.parts.get(index)
        if part is None:
            raise ProviderError(
                f"the provider sent a delta for block {index}, which never started",
                code="server_error",
            )
        match delta:
            case SdkTextDelta(text=text):
                part.text.append(text)
                return [TextDelta(text=text)] if text else []
            case ThinkingDelta(thinking=text):
                part.text.append(text)
                return [ReasoningDelta(text=text)] if text else []
            case SignatureDelta(signature=signature):
                part.block["signature"] = part.block.get("signature", "") + signature
            case InputJSONDelta(partial_json=fragment):
                part.text.append(fragment)
        return []

    def response(self) -> ModelResponse:
        text: list[str] = []
        thinking: list[str] = []
        calls: list[ToolCall] = []
        layout: list[Block] = []
        for index in sorted(self.parts):
            part = self.parts[index]
            block, joined = part.block, "".join(part.text)
            match block.get("type"):
                case "text":
                    text.append(joined)
                    layout.append({"type": "text"})
                case "thinking":
                    thinking.append(joined)
                    layout.append({**block, "thinking": joined})
                case "redacted_thinking":
                    layout.append(block)
                case "tool_use":
                    calls.append(_call(block, joined))
                    layout.append({"type": "tool_use", "id": block["id"]})
        replayable = any(b["type"] in ("thinking", "redacted_thinking") for b in layout)
        details = {DETAILS: {"model": self.model, "content": layout}} if replayable else None
        reason = self.stop_reason
        return ModelResponse(
            text="".join(text),
            tool_calls=tuple(calls),
            reasoning="\n\n".join(t for t in thinking if t) or None,
            usage=self.tokens.usage(),
            finish_reason=STOP_REASONS.get(reason, reason) if reason else None,
            provider_details=details,
        )


def _started(block: Any) -> Block:
    match block:
        case SdkTextBlock():
            return {"type": "text"}
        case ThinkingBlock(signature=signature):
            return {"type": "thinking", "thinking": "", "signature": signature or ""}
        case RedactedThinkingBlock(data=data):
            return {"type": "redacted_thinking", "data": data}
        case ToolUseBlock(id=call_id, name=name):
            return {"type": "tool_use", "id": call_id, "name": name}
    kind = getattr(block, "type", "unknown")
    raise ProviderError(f"the reply holds a {kind} block, which Horsie cannot carry",
                        code="unsupported")  # fmt: skip


def _call(block: Block, arguments: str) -> ToolCall:
    """The streamed JSON of the input, or `{}` for a call that streamed no input."""
    return ToolCall(id=str(block["id"]), name=str(block["name"]), arguments=arguments or "{}")


# Errors: SDK and transport exceptions into ProviderError codes.


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except (anthropic.APIError, httpx.HTTPError) as error:
        raise _provider_error(error) from error
    except json.JSONDecodeError as error:  # an event that is not JSON: the SDK's own parse
        raise ProviderError(
            f"the provider sent a malformed stream event: {error}", code="server_error"
        ) from error


def _provider_error(error: anthropic.APIError | httpx.HTTPError) -> ProviderError:
    if isinstance(error, anthropic.APITimeoutError | httpx.TimeoutException):
        return ProviderError(str(error), code="timeout", retryable=True)
    if isinstance(error.__cause__, ProviderError):  # refused before connecting
        return error.__cause__
    if isinstance(error, anthropic.APIConnectionError | httpx.TransportError):
        return ProviderError(str(error), code="connection", retryable=True)
    if isinstance(error, anthropic.APIStatusError):
        inner = error.body.get("error") if isinstance(error.body, dict) else None
        status = error.status_code
        if status < 400 and isinstance(inner, dict):  # an error event inside the stream
            status = ERROR_STATUS.get(str(inner.get("type")), 500)
        failed = _status_error(status, _said(inner))
        failed.retry_after = retry_after(error.response.headers)
        return failed
    return ProviderError(str(error), code="unknown")
