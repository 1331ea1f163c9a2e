"""The `openai_chat` wire: chat completions through the official `openai` SDK.

One retry mechanism: the SDK's own retries are off and `with_retries` from `base` wraps only
the opening of the stream (the request and its first chunk). Once an event has been yielded
nothing is retried, so a caller never sees text twice. Chat-completions reasoning
(`reasoning_content` / `reasoning` deltas, as local and compatible servers send them) is shown
as `ReasoningDelta`s and kept in the response; it goes back as `reasoning_content` on an
assistant message only where the card's `reasoning_replay` rule says so (`never`, the
default; `tool_turns`: the assistant messages after the last user message; `always`).
A stream that ends before its finish reason, or a chunk that is not JSON, is a
`ProviderError`: no half reply is returned. A client is kept per event loop, since pooled
connections must not cross loops. The body is built here as JSON bytes
(`harness.providers.encoding`) and sent through the SDK's low-level `post`, so the SDK's
per-message transform never runs on the history.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import weakref
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, assert_never

import httpx
import openai
from openai import AsyncOpenAI, AsyncStream
from openai._streaming import ServerSentEvent
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
    ChatCompletionMessageToolCallParam,
)

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
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from harness.providers.base import (
    Capabilities,
    CardConfig,
    Opened,
    ProviderError,
    ReplayRule,
    RetryPolicy,
    events_of,
    first_event,
    retry_after,
    usage_checked,
    with_retries,
)
from harness.providers.encoding import Pieces, Raw, dumps, obj
from harness.providers.guard import ConnectCheck, UrlsOnce, client_of_loop, guarded
from harness.providers.overflow import is_overflow
from harness.providers.tokenizers import openai_counter
from harness.tokens import TokenCounter

WIRE = "openai_chat"
DEFAULT_TIMEOUT = 120.0
NO_API_KEY = "not-needed"
# A provider's error message shown to users is cut to this many characters.
MESSAGE_CHARS = 400


class Chunks(AsyncStream[object]):
    """The SDK's stream of chunks as the JSON values sent (`object`: the SDK builds no typed
    chunk, a pydantic construction of some 0.1 ms each), reading the body to its end once
    `[DONE]` arrives.

    The SDK stops at `[DONE]` and closes the response before the body's last bytes are read,
    which closes the connection too: every call then opened a new one. Read to the end, the
    response goes back to the pool and the next call reuses its connection.
    """

    async def _iter_events(self) -> AsyncIterator[ServerSentEvent]:
        events = super()._iter_events()
        async for event in events:
            if event.data.startswith("[DONE]"):
                async for _rest in events:
                    pass
            yield event


def build(card: CardConfig, options: dict[str, Any]) -> OpenAIChatProvider:
    return OpenAIChatProvider(
        card=card,
        timeout=float(options.get("timeout", DEFAULT_TIMEOUT)),
        retry=options.get("retry") or RetryPolicy(),
        connect_check=options.get("connect_check"),
    )


@dataclass(kw_only=True, eq=False)
class OpenAIChatProvider:
    """Not frozen: the `Provider` protocol declares `capabilities` as a plain attribute."""

    card: CardConfig
    timeout: float = DEFAULT_TIMEOUT
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    connect_check: ConnectCheck | None = None
    capabilities: Capabilities = Capabilities(tools=True, streaming_usage=True)
    counter: TokenCounter = field(init=False)
    _clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncOpenAI] = field(
        default_factory=weakref.WeakKeyDictionary, repr=False, compare=False
    )
    _pieces: Pieces = field(default_factory=Pieces, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.counter = openai_counter(self.card.model, self.card.base_url)
        replays = self.card.reasoning_replay != "never"
        self.capabilities = Capabilities(tools=True, streaming_usage=True, reasoning_replay=replays)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        opened = await with_retries(lambda: self._open(request), self.retry)
        assembly = _Assembly()
        try:
            async for chunk in events_of(opened, _translated):
                for event in assembly.feed(chunk):
                    yield event
        finally:
            await opened.stream.close()
        if assembly.finish_reason is None:
            raise ProviderError(CUT, code="server_error", retryable=True)
        yield ResponseDone(response=assembly.response())

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The request as plain JSON values: what `encoded` sends, built without the cache."""
        fields = self._fields(request)
        return {"messages": messages(request.messages, self.card.reasoning_replay)} | fields

    def encoded(self, request: ModelRequest) -> bytes:
        """`body` as the bytes sent, each message's encoding reused from earlier calls."""
        messages = request.messages
        replay = replay_keys(self.card.reasoning_replay, messages)
        joined = self._pieces.joined(messages, replay, self._piece)  # type: ignore[arg-type]
        fields: dict[str, Any] = self._fields(request)
        if "tools" in fields:
            fields["tools"] = self._pieces.listed(request.tools, None, fields["tools"])
        return obj([("messages", Raw(b"[" + joined + b"]")), *fields.items()])

    def _piece(self, message: Message, replay: bool) -> tuple[bytes, ...]:
        replay = replay and isinstance(message, AssistantMessage) and bool(message.reasoning)
        make = lambda: (dumps(_message(message, replay=replay)),)  # noqa: E731
        return self._pieces.get(message, replay, make)

    def _fields(self, request: ModelRequest) -> dict[str, Any]:
        fields: dict[str, Any] = {"model": self.card.model}
        if request.tools:
            fields["tools"] = [_tool(spec) for spec in request.tools]
        fields["max_tokens"] = request.max_output_tokens or self.card.max_output_tokens
        fields["stream"] = True
        fields["stream_options"] = {"include_usage": True}
        return fields

    async def _open(self, request: ModelRequest) -> Opened[object]:
        with _translated():
            stream = await self._client().post(
                "/chat/completions",
                content=self.encoded(request),
                options={"security": {"bearer_auth": True}},
                cast_to=ChatCompletion,
                stream=True,
                stream_cls=Chunks,
            )
        return await first_event(stream, _translated)

    def prepare(self) -> None:
        """Build what this loop's first call would (the SDK client), ahead of it."""
        self._client()

    def _client(self) -> AsyncOpenAI:
        return client_of_loop(
            self._clients,
            lambda: OpenAIClient(
                api_key=self.card.api_key or NO_API_KEY,
                base_url=self.card.base_url,
                timeout=self.timeout,
                max_retries=0,
                http_client=guarded(self.connect_check, self.timeout),
            ),
        )


class OpenAIClient(UrlsOnce, AsyncOpenAI):
    """The SDK's client, merging each path with the base URL once."""


# Request: our messages and tools as chat-completions JSON.


def messages(
    messages: tuple[Message, ...], rule: ReplayRule = "never"
) -> list[ChatCompletionMessageParam]:
    loop_start = tool_loop_start(messages)
    return [
        _message(message, replay=replays(rule, index, loop_start))
        for index, message in enumerate(messages)
    ]


def tool_loop_start(messages: tuple[Message, ...]) -> int:
    """The index after the last user message: the messages of the current tool loop."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], UserMessage):
            return index + 1
    return 0


def replay_keys(rule: ReplayRule, messages: tuple[Message, ...]) -> tuple[bool, ...]:
    """`replays` for every index, built in one step: no walk of the context for it."""
    match rule:
        case "never":
            return (False,) * len(messages)
        case "tool_turns":
            start = tool_loop_start(messages)
            return (False,) * start + (True,) * (len(messages) - start)
        case "always":
            return (True,) * len(messages)
        case _:
            assert_never(rule)


def replays(rule: ReplayRule, index: int, loop_start: int) -> bool:
    match rule:
        case "never":
            return False
        case "tool_turns":
            return index >= loop_start
        case "always":
            return True
        case _:
            assert_never(rule)


def _message(message: Message, *, replay: bool = False) -> ChatCompletionMessageParam:
    match message:
        case SystemMessage(text=text):
            return {"role": "system", "content": text}
        case UserMessage(text=text):
            return {"role": "user", "content": text}
        case AssistantMessage():
            return _assistant(message, replay=replay)
        case ToolResultMessage():
            content = f"Error: {message.text}" if message.is_error else message.text
            return {"role": "tool", "tool_call_id": message.call_id, "content": content}
        case _:
            assert_never(message)


def _assistant(message: AssistantMessage, *, replay: bool) -> ChatCompletionMessageParam:
    """The reasoning goes back as `reasoning_content` only when the card's rule replays it
    here (the field compatible servers read; OpenAI's own models have none to replay)."""
    param: dict[str, Any] = {"role": "assistant", "content": message.text}
    if message.tool_calls:
        param["content"] = message.text or None
        param["tool_calls"] = [_tool_call(call) for call in message.tool_calls]
    if replay and message.reasoning:
        param["reasoning_content"] = message.reasoning
    return param  # type: ignore[return-value]  # the SDK's type has no reasoning field


def _tool_call(call: ToolCall) -> ChatCompletionMessageToolCallParam:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def _tool(spec: ToolSpec) -> ChatCompletionFunctionToolParam:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": dict(spec.parameters),
        },
    }


# Response: chunks into events, fragments into a whole response.


CUT = "the stream was cut before the reply was complete"


JSON = dict[str, Any]


def _object(value: object) -> JSON:
    return value if isinstance(value, dict) else {}


def _string(value: object) -> str:
    return value if isinstance(value, str) else ""


@dataclass(kw_only=True)
class _CallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def add(self, fragment: JSON) -> None:
        self.id = self.id or _string(fragment.get("id"))
        function = _object(fragment.get("function"))
        self.name = self.name or _string(function.get("name"))
        self.arguments.append(_string(function.get("arguments")))


@dataclass(kw_only=True)
class _Assembly:
    """A builder, so mutable: the stream's pieces gathered until the last chunk.

    Chunks arrive as the JSON values the server sent (the SDK parses the stream and raises
    the errors in it; it builds no typed chunk): a value of the wrong type is ignored, as
    if absent, so a server's nonsense never reaches the reply."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _CallParts] = field(default_factory=dict)
    usage: Usage | None = None
    finish_reason: str | None = None

    def feed(self, chunk: object) -> list[StreamEvent]:
        chunk = _object(chunk)
        if isinstance(usage := chunk.get("usage"), dict):
            self.usage = _usage(usage) or self.usage
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices:
            return []
        choice = _object(choices[0])
        self.finish_reason = _string(choice.get("finish_reason")) or self.finish_reason
        return self._delta(_object(choice.get("delta")))

    def _delta(self, delta: JSON) -> list[StreamEvent]:
        fragments = delta.get("tool_calls")
        for position, fragment in enumerate(fragments if isinstance(fragments, list) else ()):
            if not isinstance(fragment, dict):
                continue
            index = fragment.get("index")
            index = index if isinstance(index, int) and not isinstance(index, bool) else position
            self.calls.setdefault(index, _CallParts()).add(fragment)
        events: list[StreamEvent] = []
        if reasoning := _reasoning(delta):
            self.reasoning.append(reasoning)
            events.append(ReasoningDelta(text=reasoning))
        if content := _string(delta.get("content")):
            self.text.append(content)
            events.append(TextDelta(text=content))
        return events

    def response(self) -> ModelResponse:
        return ModelResponse(
            text="".join(self.text),
            tool_calls=tuple(_whole_call(i, self.calls[i]) for i in sorted(self.calls)),
            reasoning="".join(self.reasoning) or None,
            usage=self.usage,
            finish_reason=self.finish_reason,
        )


def _whole_call(index: int, parts: _CallParts) -> ToolCall:
    """Some compatible servers send no id; the fallback keeps call and result paired."""
    call_id = parts.id or f"call_{index}"
    return ToolCall(id=call_id, name=parts.name, arguments="".join(parts.arguments))


def _reasoning(delta: JSON) -> str | None:
    for key in ("reasoning_content", "reasoning"):
        if value := _string(delta.get(key)):
            return value
    return None


def _usage(usage: JSON) -> Usage | None:
    """Whatever a server sent as usage is checked here."""
    cached = _object(usage.get("prompt_tokens_details")).get("cached_tokens")
    return usage_checked(usage.get("prompt_tokens"), usage.get("completion_tokens"), cached)


# Errors: SDK and transport exceptions into ProviderError codes.


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except (openai.APIError, httpx.HTTPError) as error:
        raise _provider_error(error) from error
    except json.JSONDecodeError as error:  # a chunk that is not JSON: the SDK's own parse
        raise ProviderError(
            f"the provider sent a malformed stream chunk: {error}", code="server_error"
        ) from error


def _provider_error(error: openai.APIError | httpx.HTTPError) -> ProviderError:
    if isinstance(error, openai.APITimeoutError | httpx.TimeoutException):
        return ProviderError(str(error), code="timeout", retryable=True)
    if isinstance(error.__cause__, ProviderError):  # refused before connecting
        return error.__cause__
    if isinstance(error, openai.APIConnectionError | httpx.TransportError):
        return ProviderError(str(error), code="connection", retryable=True)
    if isinstance(error, openai.APIStatusError):
        failed = _status_error(error.status_code, _said(error.body))
        failed.retry_after = retry_after(error.response.headers)
        return failed
    return ProviderError(str(error), code="unknown")


def _said(body: object) -> str:
    """What the provider said, from its JSON `error.message` only, cut short.

    Never the raw body: a card pointed at some internal service would otherwise show that
    service's answer to whoever reads the notice. The SDK hands over the `error` object when
    the body has one. A context-length code the message lacks is appended, so the words that
    identify the error (and the numbers in the message) survive for whoever parses them.
    """
    if not isinstance(body, dict):
        return "(no JSON error message)"
    message = body.get("message")
    text = _cut(message) if isinstance(message, str) and message.strip() else "(no message)"
    for key in ("code", "type"):
        word = body.get(key)
        if isinstance(word, str) and is_overflow(word) and word not in text:
            text += f" ({word})"
    figures = [
        f"{k}: {body[k]}" for k in ("n_prompt_tokens", "n_ctx") if isinstance(body.get(k), int)
    ]
    return text + (f" ({', '.join(figures)})" if figures else "")


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"


def _status_error(status: int, said: str) -> ProviderError:
    message = f"HTTP {status}: {said}"
    if status == 429:
        return ProviderError(message, code="rate_limited", retryable=True)
    if status >= 500:
        return ProviderError(message, code="server_error", retryable=True)
    if status in (401, 403):
        return ProviderError(message, code="auth")
    if is_overflow(said):
        return ProviderError(message, code="context_length_exceeded")
    return ProviderError(message, code="bad_request")
