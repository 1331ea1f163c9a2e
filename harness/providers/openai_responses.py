"""The `openai_responses` wire: OpenAI's Responses API through the official `openai` SDK.

Nothing is stored at OpenAI (`store=false`): every call sends the whole context as input
items. Reasoning is asked for encrypted (`include=["reasoning.encrypted_content"]`); the
reasoning items of a reply are kept in the assistant message's `provider_details`, with the
order of the reply's output items, and go back in place (before the message or calls they
preceded, with those items' ids) on every later call to the same model. Reasoning summaries
stream as `ReasoningDelta`s. One retry mechanism, as in `openai_chat`: `with_retries` wraps
only the opening of the stream; a stream that ends before `response.completed` (or
`response.incomplete`), or fails, is a `ProviderError` and no half reply is returned.
The body goes as JSON bytes through the SDK's low-level `post` (see `openai_chat`).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, assert_never

from openai import AsyncOpenAI, AsyncStream
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseErrorEvent,
    ResponseFailedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseIncompleteEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseReasoningSummaryPartAddedEvent,
    ResponseReasoningSummaryTextDeltaEvent,
    ResponseReasoningTextDeltaEvent,
    ResponseStreamEvent,
    ResponseTextDeltaEvent,
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
    RetryPolicy,
    events_of,
    first_event,
    usage_checked,
    with_retries,
)
from harness.providers.encoding import Pieces, Raw, dumps, obj
from harness.providers.guard import ConnectCheck, client_of_loop, guarded
from harness.providers.openai_chat import (
    CUT,
    NO_API_KEY,
    OpenAIClient,
    _status_error,
    _translated,
)
from harness.providers.overflow import is_overflow
from harness.providers.tokenizers import openai_counter
from harness.tokens import TokenCounter

WIRE = "openai_responses"
DEFAULT_TIMEOUT = 120.0
DETAILS = "openai_responses"  # this wire's key in `provider_details`
# Models that reason: asked for a reasoning summary, which other models refuse as a parameter.
REASONING_MODELS = ("o1", "o3", "o4", "gpt-5", "codex")

Events = AsyncStream[ResponseStreamEvent]
Item = dict[str, Any]


def build(card: CardConfig, options: dict[str, Any]) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider(
        card=card,
        timeout=float(options.get("timeout", DEFAULT_TIMEOUT)),
        retry=options.get("retry") or RetryPolicy(),
        connect_check=options.get("connect_check"),
    )


@dataclass(kw_only=True, eq=False)
class OpenAIResponsesProvider:
    card: CardConfig
    timeout: float = DEFAULT_TIMEOUT
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    connect_check: ConnectCheck | None = None
    capabilities: Capabilities = Capabilities(
        tools=True, streaming_usage=True, reasoning_replay=True
    )
    counter: TokenCounter = field(init=False)
    _clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncOpenAI] = field(
        default_factory=weakref.WeakKeyDictionary, repr=False, compare=False
    )
    _pieces: Pieces = field(default_factory=Pieces, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.counter = openai_counter(self.card.model, self.card.base_url)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        opened = await with_retries(lambda: self._open(request), self.retry)
        assembly = _Assembly(model=self.card.model)
        try:
            async for event in events_of(opened, _translated, _raise_failure):
                for out in assembly.feed(event):
                    yield out
        finally:
            await opened.stream.close()
        if not assembly.finished:
            raise ProviderError(CUT, code="server_error", retryable=True)
        yield ResponseDone(response=assembly.response())

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The request as plain JSON values: what `encoded` sends, built without the cache."""
        instructions, items = input_items(request.messages, self.card.model)
        return self._fields(request, instructions, items)

    def encoded(self, request: ModelRequest) -> bytes:
        """`body` as the bytes sent, each message's items encoded once while in context."""
        messages = request.messages
        first = messages[0] if messages else None
        instructions = first.text if isinstance(first, SystemMessage) else None
        rest = messages[1:] if instructions is not None else messages
        joined = self._pieces.joined(rest, (None,) * len(rest), self._items_of)  # type: ignore[arg-type]
        fields = self._fields(request, instructions, Raw(b"[" + joined + b"]"))
        if "tools" in fields:
            fields["tools"] = self._pieces.listed(request.tools, None, fields["tools"])
        return obj(fields.items())

    def _items_of(self, message: Message, _: None = None) -> tuple[bytes, ...]:
        model = self.card.model
        make = lambda: tuple(dumps(item) for item in message_items(message, model))  # noqa: E731
        return self._pieces.get(message, None, make)

    def _fields(
        self, request: ModelRequest, instructions: str | None, items: Any
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.card.model,
            "input": items,
            "store": False,
            "include": ["reasoning.encrypted_content"],
            "max_output_tokens": request.max_output_tokens or self.card.max_output_tokens,
            "stream": True,
        }
        if instructions is not None:
            body["instructions"] = instructions
        if request.tools:
            body["tools"] = [_tool(spec) for spec in request.tools]
        if self.card.model.startswith(REASONING_MODELS):
            body["reasoning"] = {"summary": "auto"}
        return body

    async def _open(self, request: ModelRequest) -> Opened[ResponseStreamEvent]:
        with _translated():
            stream = await self._client().post(
                "/responses",
                content=self.encoded(request),
                options={"security": {"bearer_auth": True}},
                cast_to=Response,
                stream=True,
                stream_cls=Events,
            )
        return await first_event(stream, _translated, _raise_failure)

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


# Request: our messages as input items.


def input_items(messages: tuple[Message, ...], model: str) -> tuple[str | None, list[Item]]:
    """The leading system message becomes `instructions`; any later one a developer item."""
    instructions: str | None = None
    items: list[Item] = []
    for index, message in enumerate(messages):
        if index == 0 and isinstance(message, SystemMessage):
            instructions = message.text
        else:
            items.extend(message_items(message, model))
    return instructions, items


def message_items(message: Message, model: str) -> list[Item]:
    """One message's input items, wherever it stands (but a leading system message)."""
    match message:
        case SystemMessage(text=text):
            return [{"role": "developer", "content": text}]
        case UserMessage(text=text):
            return [{"role": "user", "content": text}]
        case AssistantMessage():
            return assistant_items(message, model)
        case ToolResultMessage():
            output = f"Error: {message.text}" if message.is_error else message.text
            return [{"type": "function_call_output", "call_id": message.call_id, "output": output}]
        case _:
            assert_never(message)


def assistant_items(message: AssistantMessage, model: str) -> list[Item]:
    """The reply's output items in their order: reasoning items as they came, the text and
    calls from the message (with their item ids when the details have them)."""
    layout = _layout(message.provider_details, model)
    calls = {call.id: call for call in message.tool_calls}
    items: list[Item] = []
    text_sent = not message.text
    for kept in layout:
        match kept.get("type"):
            case "reasoning":
                items.append(dict(kept))
            case "message" if not text_sent:
                items.append(_text_item(message.text, kept.get("id")))
                text_sent = True
            case "function_call" if kept.get("call_id") in calls:
                items.append(_call_item(calls.pop(kept["call_id"]), kept.get("id")))
    if not text_sent:
        items.append(_text_item(message.text, None))
    items.extend(_call_item(call, None) for call in calls.values())
    return items


def _layout(details: Mapping[str, Any] | None, model: str) -> list[Mapping[str, Any]]:
    """Encrypted reasoning is only readable by the model that wrote it."""
    mine = (details or {}).get(DETAILS)
    if not isinstance(mine, Mapping) or mine.get("model") != model:
        return []
    output = mine.get("output")
    return (
        [item for item in output if isinstance(item, Mapping)] if isinstance(output, list) else []
    )


def _text_item(text: str, item_id: object) -> Item:
    if not isinstance(item_id, str):
        return {"role": "assistant", "content": text}
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _call_item(call: ToolCall, item_id: object) -> Item:
    item: Item = {
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": call.arguments,
    }
    if isinstance(item_id, str):
        item["id"] = item_id
    return item


def _tool(spec: ToolSpec) -> Item:
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": dict(spec.parameters),
        "strict": False,
    }


# Response: events into deltas, output items into a whole response.


def _raise_failure(event: ResponseStreamEvent) -> None:
    """An `error` event or a failed response, as the same errors an HTTP status gives."""
    if isinstance(event, ResponseErrorEvent):
        raise _stream_error(event.code, event.message)
    if isinstance(event, ResponseFailedEvent):
        error = event.response.error
        raise _stream_error(
            error.code if error else None, error.message if error else "the response failed"
        )


def _stream_error(code: object, message: object) -> ProviderError:
    said = str(message or "(no message)")
    word = str(code or "")
    if word and word not in said and is_overflow(word):
        said += f" ({word})"
    if word in ("rate_limit_exceeded", "insufficient_quota"):
        return _status_error(429, said)
    if is_overflow(said):
        return _status_error(400, said)
    return _status_error(500, said)


@dataclass(kw_only=True)
class _CallParts:
    item_id: str | None = None
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    whole: str | None = None  # the arguments as `output_item.done` gives them


@dataclass(kw_only=True)
class _Assembly:
    """A builder, so mutable: the stream's pieces gathered until the response is complete."""

    model: str
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _CallParts] = field(default_factory=dict)
    output: dict[int, Item] = field(default_factory=dict)  # the layout, by output index
    usage: Usage | None = None
    finish_reason: str | None = None
    finished: bool = False

    def feed(self, event: ResponseStreamEvent) -> list[StreamEvent]:
        match event:
            case ResponseTextDeltaEvent(delta=delta):
                self.text.append(delta)
                return [TextDelta(text=delta)] if delta else []
            case (
                ResponseReasoningSummaryTextDeltaEvent(delta=delta)
                | ResponseReasoningTextDeltaEvent(delta=delta)
            ):
                self.reasoning.append(delta)
                return [ReasoningDelta(text=delta)] if delta else []
            case ResponseReasoningSummaryPartAddedEvent() if self.reasoning:
                self.reasoning.append("\n\n")
            case ResponseOutputItemAddedEvent(output_index=index, item=item):
                self._item(index, item.to_dict())
            case ResponseFunctionCallArgumentsDeltaEvent(output_index=index, delta=delta):
                self.calls.setdefault(index, _CallParts()).arguments.append(delta)
            case ResponseOutputItemDoneEvent(output_index=index, item=item):
                self._item(index, item.to_dict(), done=True)
            case ResponseCompletedEvent(response=response):
                self._complete(response, incomplete=False)
            case ResponseIncompleteEvent(response=response):
                self._complete(response, incomplete=True)
        return []

    def _item(self, index: int, item: Item, *, done: bool = False) -> None:
        kind = item.get("type")
        if kind == "reasoning":
            if done:
                self.output[index] = {k: v for k, v in item.items() if k != "status"}
        elif kind == "message":
            self.output[index] = {"type": "message", "id": item.get("id")}
        elif kind == "function_call":
            parts = self.calls.setdefault(index, _CallParts())
            parts.item_id = parts.item_id or item.get("id")
            parts.call_id = parts.call_id or str(item.get("call_id") or "")
            parts.name = parts.name or str(item.get("name") or "")
            if done and isinstance(item.get("arguments"), str):
                parts.whole = item["arguments"]
            self.output[index] = {"type": "function_call", "id": parts.item_id,
                                  "call_id": parts.call_id}  # fmt: skip

    def _complete(self, response: Response, *, incomplete: bool) -> None:
        self.finished = True
        usage = response.usage
        if usage is not None:
            details = usage.input_tokens_details
            cached = getattr(details, "cached_tokens", None) if details is not None else None
            self.usage = usage_checked(usage.input_tokens, usage.output_tokens, cached)
        if incomplete:
            reason = getattr(response.incomplete_details, "reason", None)
            self.finish_reason = "length" if reason == "max_output_tokens" else str(reason)
        else:
            self.finish_reason = "tool_calls" if self.calls else "stop"

    def response(self) -> ModelResponse:
        calls = tuple(_whole_call(i, self.calls[i]) for i in sorted(self.calls))
        layout = [self.output[i] for i in sorted(self.output)]
        details = None
        if any(item.get("type") == "reasoning" for item in layout):
            details = {DETAILS: {"model": self.model, "output": layout}}
        return ModelResponse(
            text="".join(self.text),
            tool_calls=calls,
            reasoning="".join(self.reasoning).strip() or None,
            usage=self.usage,
            finish_reason=self.finish_reason,
            provider_details=details,
        )


def _whole_call(index: int, parts: _CallParts) -> ToolCall:
    arguments = parts.whole if parts.whole is not None else "".join(parts.arguments)
    return ToolCall(id=parts.call_id or f"call_{index}", name=parts.name, arguments=arguments)
