"""The provider protocol every wire implements.

A wire has one async `stream()`; `complete()` is built from it, so streaming and
non-streaming calls share one code path. What a wire can do is stated by capability flags,
never found out with `isinstance`. A request part a wire cannot carry raises
`UnsupportedRequest`; nothing is silently dropped. Failures become `ProviderError` with a
`code` the turn loop can report and a `retryable` flag the wire's retry loop obeys.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

from harness.messages import ModelRequest, ModelResponse, ResponseDone, StreamEvent, Usage
from harness.tokens import TokenCounter

log = logging.getLogger(__name__)
MAX_USAGE = 1_000_000_000

Wire = Literal["openai_chat", "openai_responses", "anthropic", "local"]
# When a wire that may replay reasoning sends it back: never, only on the assistant messages
# of the current tool loop (after the last user message), or on every assistant message.
ReplayRule = Literal["never", "tool_turns", "always"]
WIRES: tuple[Wire, ...] = ("openai_chat", "openai_responses", "anthropic", "local")

ErrorCode = Literal[
    "rate_limited",
    "server_error",
    "timeout",
    "connection",
    "context_length_exceeded",
    "bad_request",
    "auth",
    "unsupported",
    "unknown",
]


@dataclass(frozen=True, kw_only=True)
class CardConfig:
    """A model card as the core sees it. `api_key` is read from `api_key_env` by the wiring."""

    wire: Wire
    model: str
    base_url: str | None = None
    api_key: str | None = None
    context_window: int | None = None
    max_output_tokens: int = 1024
    reasoning_replay: ReplayRule = "never"
    thinking_budget: int | None = None  # extended thinking (anthropic); None: off


@dataclass(frozen=True, kw_only=True)
class Capabilities:
    tools: bool
    streaming_usage: bool
    reasoning_replay: bool = False
    counts_prompt: bool = False  # the provider counts a request's prompt (`PromptCounter`)


class ProviderError(Exception):
    """`retry_after` is the wait in seconds the server asked for (`Retry-After`), if any."""

    def __init__(
        self,
        message: str,
        *,
        code: ErrorCode = "unknown",
        retryable: bool = False,
        retry_after: float | None = None,
    ):
        super().__init__(message)
        self.code: ErrorCode = code
        self.retryable = retryable
        self.retry_after = retry_after


class UnsupportedRequest(ProviderError):
    def __init__(self, message: str):
        super().__init__(message, code="unsupported", retryable=False)


class Provider(Protocol):
    capabilities: Capabilities

    @property
    def counter(self) -> TokenCounter:
        """The wire's ruler: the model's own tokenizer where Horsie has it, else the estimate."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...


class PromptCounter(Protocol):
    """A provider whose server counts a request's prompt tokens (a call, not free)."""

    async def count_tokens(self, request: ModelRequest) -> int: ...


def usage_checked(prompt: object, output: object, cached: object = 0) -> Usage | None:
    """A provider's reported usage, or None when any count is nonsense (not a whole number,
    negative, absurd): logged and ignored, never stored as a count."""
    counts = [sane_count(n) for n in (prompt, output, 0 if cached is None else cached)]
    if None in counts:
        log.warning("ignoring nonsense usage from the provider: %r", (prompt, output, cached))
        return None
    input_tokens, output_tokens, cached_tokens = (int(n or 0) for n in counts)
    return Usage(
        input_tokens=input_tokens, output_tokens=output_tokens, cached_tokens=cached_tokens
    )


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """The wait a server asked for, in seconds: `retry-after-ms`, else a number of seconds in
    `retry-after` (an HTTP date there is ignored: the backoff applies)."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        if 0 <= seconds < MAX_USAGE:
            return seconds
    return None


def sane_count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_USAGE else None


async def complete(provider: Provider, request: ModelRequest) -> ModelResponse:
    """The non-streaming call: drain the stream and return its final response."""
    async for event in provider.stream(request):
        if isinstance(event, ResponseDone):
            return event.response
    raise ProviderError("the stream ended without a response", code="server_error")


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    longest_wait: float = 30.0  # a server asking for a longer wait is not retried

    def delay(self, attempt: int) -> float:
        """Exponential backoff with full jitter, capped."""
        ceiling = min(self.max_delay, self.base_delay * (2**attempt))
        return random.uniform(ceiling / 2, ceiling)

    def wait(self, attempt: int, error: ProviderError) -> float | None:
        """The server's `Retry-After` where it gave one, else the backoff; None: give up."""
        if error.retry_after is None:
            return self.delay(attempt)
        return max(0.0, error.retry_after) if error.retry_after <= self.longest_wait else None


T = TypeVar("T")
E = TypeVar("E")
Translate = Callable[[], AbstractContextManager[None]]


def nothing_wrong(event: object) -> None:
    """The check of a wire whose events carry no failures of their own."""


@dataclass(frozen=True, kw_only=True)
class Opened(Generic[E]):
    """An SDK stream whose first event was read while retrying was still safe."""

    stream: Any  # the SDK's async stream: iterable, with `close()`
    first: E | None


async def first_event(
    stream: Any, translate: Translate, check: Callable[[E], None] = nothing_wrong
) -> Opened[E]:
    """Read one event inside `with_retries`; a failure here closes the stream.

    `translate` turns the SDK's exceptions into `ProviderError`s; `check` raises for an event
    that reports a failure in the stream itself (a wire whose errors can arrive as events)."""
    try:
        with translate():
            first: E | None = await anext(aiter(stream), None)
            if first is not None:
                check(first)
    except BaseException:
        await stream.close()
        raise
    return Opened(stream=stream, first=first)


async def events_of(
    opened: Opened[E], translate: Translate, check: Callable[[E], None] = nothing_wrong
) -> AsyncIterator[E]:
    """The first event, then the rest: past the first, nothing is retried."""
    if opened.first is None:
        return
    yield opened.first
    with translate():
        async for event in opened.stream:
            check(event)
            yield event


async def with_retries(
    start: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Run `start` until it succeeds, retrying only retryable `ProviderError`s, after the
    wait the server asked for when it said one."""
    for attempt in range(policy.attempts):
        try:
            return await start()
        except ProviderError as error:
            wait = policy.wait(attempt, error)
            if not error.retryable or attempt == policy.attempts - 1 or wait is None:
                raise
            await sleep(wait)
    raise AssertionError("unreachable")
