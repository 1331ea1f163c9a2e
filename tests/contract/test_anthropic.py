"""The anthropic wire against a scripted Messages API server process: the exact request bodies
it sends (thinking replayed with its signature within the tool loop only, calls and results
paired, cache breakpoints), usage with cache reads and writes, faults."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

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
from harness.providers import build_provider
from harness.providers.anthropic import AnthropicProvider, build
from harness.providers.base import CardConfig, ProviderError, RetryPolicy, complete
from harness.providers.overflow import read_overflow

from .conftest import ScriptedServer

pytestmark = pytest.mark.contract

Start = Callable[[list[dict[str, Any]]], ScriptedServer]
FAST_RETRY = RetryPolicy(attempts=3, base_delay=0.001, max_delay=0.002)
CACHE = {"type": "ephemeral"}
SYSTEM = SystemMessage(text="Be brief.")
HELLO = ModelRequest(messages=(SYSTEM, UserMessage(text="Hello")), max_output_tokens=33)
WEATHER = ToolSpec(
    name="weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
PARIS = {"city": "Paris"}


def provider_for(server: ScriptedServer, model: str = "claude-scripted") -> AnthropicProvider:
    card = CardConfig(wire="anthropic", model=model, base_url=server.base_url, api_key="sk-test")
    return build(card, {"timeout": 10.0, "retry": FAST_RETRY})


def replayed(response: ModelResponse) -> AssistantMessage:
    return AssistantMessage(
        text=response.text,
        tool_calls=response.tool_calls,
        reasoning=response.reasoning,
        provider_details=response.provider_details,
    )


async def drain(stream: AsyncIterator[StreamEvent], seen: list[StreamEvent]) -> None:
    async for event in stream:
        seen.append(event)


def text(value: str, cached: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": value}
    return {**block, "cache_control": CACHE} if cached else block


async def test_the_wire_is_registered() -> None:
    card = CardConfig(wire="anthropic", model="claude-sonnet-4-5")
    assert isinstance(build_provider(card), AnthropicProvider)


async def test_text_streams_usage_adds_cache_reads_and_writes_and_the_body_is_exact(
    anthropic_server: Start,
) -> None:
    usage = {"input_tokens": 5, "cache_read_input_tokens": 100,
             "cache_creation_input_tokens": 20, "output_tokens": 7}  # fmt: skip
    server = anthropic_server([{"text": "Hello there, traveller.", "usage": usage}])
    seen: list[StreamEvent] = []
    await drain(provider_for(server).stream(HELLO), seen)
    deltas = [e.text for e in seen if isinstance(e, TextDelta)]
    done = seen[-1]
    assert isinstance(done, ResponseDone)
    assert len(deltas) > 1 and "".join(deltas) == done.response.text == "Hello there, traveller."
    assert done.response.usage == Usage(input_tokens=125, output_tokens=7, cached_tokens=100)
    assert done.response.finish_reason == "stop"
    assert done.response.provider_details is None
    assert server.requests() == [
        {
            "model": "claude-scripted",
            "max_tokens": 33,
            "system": [text("Be brief.", cached=True)],
            "messages": [{"role": "user", "content": [text("Hello", cached=True)]}],
            "stream": True,
        }
    ]


async def test_thinking_is_replayed_with_its_signature_within_the_tool_loop_only(
    anthropic_server: Start,
) -> None:
    server = anthropic_server(
        [
            {"thinking": "Need the weather.", "signature": "SIG-1",
             "tool_calls": [{"id": "toolu_1", "name": "weather", "input": PARIS}]},
            {"thinking": "Now answer.", "signature": "SIG-2", "text": "Sunny, 22C."},
            {"text": "You're welcome."},
        ]
    )  # fmt: skip
    provider = provider_for(server)
    ask = UserMessage(text="Weather in Paris?")
    seen: list[StreamEvent] = []
    await drain(provider.stream(ModelRequest(messages=(SYSTEM, ask), tools=(WEATHER,))), seen)
    assert "".join(e.text for e in seen if isinstance(e, ReasoningDelta)) == "Need the weather."
    first = seen[-1]
    assert isinstance(first, ResponseDone)
    assert first.response.tool_calls == (
        ToolCall(id="toolu_1", name="weather", arguments='{"city": "Paris"}'),
    )
    assert first.response.finish_reason == "tool_calls"
    result = ToolResultMessage(call_id="toolu_1", name="weather", text="22C, sunny")
    loop = (SYSTEM, ask, replayed(first.response), result)
    second = await complete(provider, ModelRequest(messages=loop, tools=(WEATHER,)))
    assert second.reasoning == "Now answer."
    thanks = UserMessage(text="Thanks!")
    await complete(provider, ModelRequest(messages=(*loop, replayed(second), thanks)))

    bodies = server.requests()
    tool = {"name": "weather", "description": "The weather in a city.",
            "input_schema": dict(WEATHER.parameters)}  # fmt: skip
    assert bodies[0]["tools"] == [tool], "the system block carries the head's breakpoint"
    thinking_1 = {"type": "thinking", "thinking": "Need the weather.", "signature": "SIG-1"}
    call_1 = {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": PARIS}
    result_1 = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "22C, sunny"}
    assert bodies[1]["messages"] == [
        {"role": "user", "content": [text("Weather in Paris?")]},
        {"role": "assistant", "content": [thinking_1, call_1]},
        {"role": "user", "content": [{**result_1, "cache_control": CACHE}]},
    ]
    assert bodies[2]["messages"] == [
        {"role": "user", "content": [text("Weather in Paris?")]},
        {"role": "assistant", "content": [call_1]},
        {"role": "user", "content": [result_1]},
        {"role": "assistant", "content": [text("Sunny, 22C.")]},
        {"role": "user", "content": [text("Thanks!", cached=True)]},
    ], "a closed tool loop sends no thinking"


async def test_parallel_results_and_consecutive_user_messages_are_merged(
    anthropic_server: Start,
) -> None:
    server = anthropic_server([{"text": "ok"}])
    calls = (ToolCall(id="t1", name="weather", arguments='{"city": "Oslo"}'),
             ToolCall(id="t2", name="weather", arguments="not json"))  # fmt: skip
    messages: tuple[Message, ...] = (
        UserMessage(text="[summary of earlier turns]"),
        UserMessage(text="Two cities?"),
        AssistantMessage(text="Checking both.", tool_calls=calls),
        ToolResultMessage(call_id="t1", name="weather", text="3C"),
        ToolResultMessage(call_id="t2", name="weather", text="bad arguments", is_error=True),
    )
    await complete(provider_for(server), ModelRequest(messages=messages))
    [body] = server.requests()
    assert "system" not in body
    assert body["messages"] == [
        {"role": "user", "content": [text("[summary of earlier turns]"), text("Two cities?")]},
        {"role": "assistant", "content": [
            text("Checking both."),
            {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Oslo"}},
            {"type": "tool_use", "id": "t2", "name": "weather",
             "input": {"arguments": "not json"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "3C"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "bad arguments",
             "is_error": True, "cache_control": CACHE},
        ]},
    ]  # fmt: skip


async def test_redacted_thinking_goes_back_verbatim_and_never_to_another_model(
    anthropic_server: Start,
) -> None:
    server = anthropic_server(
        [{"redacted": "OPAQUE", "tool_calls": [{"id": "t1", "name": "weather", "input": PARIS}]},
         {"text": "ok"}, {"text": "ok"}]
    )  # fmt: skip
    first = await complete(provider_for(server), ModelRequest(messages=(UserMessage(text="Go"),)))
    loop = (UserMessage(text="Go"), replayed(first),
            ToolResultMessage(call_id="t1", name="weather", text="22C"))  # fmt: skip
    await complete(provider_for(server), ModelRequest(messages=loop))
    await complete(provider_for(server, model="claude-other"), ModelRequest(messages=loop))
    call = {"type": "tool_use", "id": "t1", "name": "weather", "input": PARIS}
    mine, other = server.requests()[1:]
    assert mine["messages"][1]["content"] == [{"type": "redacted_thinking", "data": "OPAQUE"}, call]
    assert other["messages"][1]["content"] == [call]


async def test_turns_and_the_compaction_request_read_their_prefix_from_the_cache(
    anthropic_server: Start,
) -> None:
    """Against the server's cache accounting: 20 turns, then the compaction request."""
    server = anthropic_server([{"text": "Noted: the figures add up.", "repeat": True}])
    provider = provider_for(server)
    system = SystemMessage(text="You are a careful assistant. " * 60)
    messages: list[Message] = [system]
    usages: list[Usage] = []
    for turn in range(20):
        messages.append(UserMessage(text=f"Turn {turn}: " + "rows of figures, " * 40))
        response = await complete(provider, ModelRequest(messages=tuple(messages)))
        assert response.usage is not None
        usages.append(response.usage)
        messages.append(replayed(response))
    fold = ModelRequest(messages=(*messages, UserMessage(text="[Compaction] Summarise.")))
    folded = await complete(provider, fold)
    assert folded.usage is not None
    last_prompt = usages[-1].input_tokens
    assert usages[0].cached_tokens == 0
    assert all(u.cached_tokens > 0 for u in usages[1:])
    assert folded.usage.cached_tokens >= last_prompt, "the fold reads the whole last turn"
    total = [*usages, folded.usage]
    share = sum(u.cached_tokens for u in total) / sum(u.input_tokens for u in total)
    print(f"\nanthropic cached share over 20 turns and one compaction: {share:.1%}")
    print(f"compaction request: {folded.usage.cached_tokens}/{folded.usage.input_tokens} cached")


@pytest.mark.parametrize(
    "broken",
    [{"cut": True}, {"malformed": True},
     {"stream_error": {"type": "overloaded_error", "message": "Overloaded"}}],
)  # fmt: skip
async def test_a_broken_stream_is_a_provider_error_and_no_response(
    anthropic_server: Start, broken: dict[str, Any]
) -> None:
    server = anthropic_server([{"text": "Partial answer here.", **broken}])
    seen: list[StreamEvent] = []
    with pytest.raises(ProviderError) as caught:
        await drain(provider_for(server).stream(HELLO), seen)
    assert not any(isinstance(e, ResponseDone) for e in seen), "nothing whole to store"
    assert any(isinstance(e, TextDelta) for e in seen), "it broke mid-stream"
    assert caught.value.code == "server_error"
    assert len(server.requests()) == 1, "nothing is retried once text was shown"


async def test_an_overloaded_first_event_is_retried(anthropic_server: Start) -> None:
    server = anthropic_server(
        [{"status": 529, "type": "overloaded_error", "message": "Overloaded"}, {"text": "ok"}]
    )
    assert (await complete(provider_for(server), HELLO)).text == "ok"
    assert len(server.requests()) == 2


async def test_a_rate_limit_is_retried_after_the_wait_the_server_asked(
    anthropic_server: Start,
) -> None:
    server = anthropic_server(
        [{"status": 429, "type": "rate_limit_error", "retry_after": 1,
          "message": "Number of request tokens has exceeded your per-minute rate limit"},
         {"text": "made it"}]
    )  # fmt: skip
    began = time.monotonic()
    response = await complete(provider_for(server), HELLO)
    assert response.text == "made it"
    assert time.monotonic() - began >= 1.0
    assert len(server.requests()) == 2


async def test_a_longer_wait_than_the_policy_allows_is_reported_not_slept(
    anthropic_server: Start,
) -> None:
    server = anthropic_server([{"status": 429, "type": "rate_limit_error", "retry_after": 600,
                                "message": "Rate limited"}, {"text": "never"}])  # fmt: skip
    with pytest.raises(ProviderError) as caught:
        await complete(provider_for(server), HELLO)
    assert (caught.value.code, caught.value.retry_after) == ("rate_limited", 600.0)
    assert str(caught.value) == "HTTP 429: Rate limited"
    assert len(server.requests()) == 1


async def test_a_bad_key_is_an_auth_error(anthropic_server: Start) -> None:
    server = anthropic_server(
        [{"status": 401, "type": "authentication_error", "message": "invalid x-api-key"}]
    )
    with pytest.raises(ProviderError) as caught:
        await complete(provider_for(server), HELLO)
    assert (caught.value.code, str(caught.value)) == ("auth", "HTTP 401: invalid x-api-key")


async def test_a_prompt_too_long_is_context_length_exceeded_with_its_numbers(
    anthropic_server: Start,
) -> None:
    message = "prompt is too long: 208310 tokens > 200000 maximum"
    server = anthropic_server([{"status": 400, "type": "invalid_request_error",
                                "message": message}, {"text": "never"}])  # fmt: skip
    with pytest.raises(ProviderError) as caught:
        await complete(provider_for(server), HELLO)
    assert caught.value.code == "context_length_exceeded"
    assert str(caught.value) == f"HTTP 400: {message}"
    figures = read_overflow(str(caught.value))
    assert (figures.limit, figures.prompt) == (200000, 208310)
    assert len(server.requests()) == 1


async def test_a_thinking_budget_asks_for_thinking_and_replays_it_within_the_tool_loop(
    anthropic_server: Start,
) -> None:
    server = anthropic_server(
        [
            {"thinking": "Look it up.", "signature": "SIG-A",
             "tool_calls": [{"id": "toolu_9", "name": "weather", "input": PARIS}]},
            {"thinking": "Answer now.", "signature": "SIG-B", "text": "Mild."},
        ]
    )  # fmt: skip
    card = CardConfig(
        wire="anthropic", model="claude-scripted", base_url=server.base_url, api_key="sk-test",
        max_output_tokens=4096, thinking_budget=2048,
    )  # fmt: skip
    provider = build(card, {"timeout": 10.0, "retry": FAST_RETRY})
    ask = UserMessage(text="Weather in Paris?")
    first = await complete(provider, ModelRequest(messages=(SYSTEM, ask), tools=(WEATHER,)))
    result = ToolResultMessage(call_id="toolu_9", name="weather", text="14C")
    loop = (SYSTEM, ask, replayed(first), result)
    second = await complete(provider, ModelRequest(messages=loop, tools=(WEATHER,)))
    assert (first.reasoning, second.reasoning, second.text) == (
        "Look it up.",
        "Answer now.",
        "Mild.",
    )

    tool = {"name": "weather", "description": "The weather in a city.",
            "input_schema": dict(WEATHER.parameters), "cache_control": CACHE}  # fmt: skip
    thinking = {"type": "enabled", "budget_tokens": 2048}
    call = {"type": "tool_use", "id": "toolu_9", "name": "weather", "input": PARIS}
    assert server.requests() == [
        {
            "model": "claude-scripted",
            "max_tokens": 4096,
            "system": [text("Be brief.", cached=True)],
            "messages": [{"role": "user", "content": [text("Weather in Paris?", cached=True)]}],
            "tools": [{k: v for k, v in tool.items() if k != "cache_control"}],
            "thinking": thinking,
            "stream": True,
        },
        {
            "model": "claude-scripted",
            "max_tokens": 4096,
            "system": [text("Be brief.", cached=True)],
            "messages": [
                {"role": "user", "content": [text("Weather in Paris?")]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Look it up.", "signature": "SIG-A"}, call,
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_9", "content": "14C",
                     "cache_control": CACHE},
                ]},
            ],
            "tools": [{k: v for k, v in tool.items() if k != "cache_control"}],
            "thinking": thinking,
            "stream": True,
        },
    ]  # fmt: skip


async def test_no_thinking_without_a_budget_or_when_the_call_s_limit_is_below_it(
    anthropic_server: Start,
) -> None:
    server = anthropic_server([{"text": "ok", "repeat": True}])
    off = provider_for(server)
    card = CardConfig(
        wire="anthropic", model="claude-scripted", base_url=server.base_url, api_key="sk-test",
        max_output_tokens=4096, thinking_budget=2048,
    )  # fmt: skip
    on = build(card, {"timeout": 10.0, "retry": FAST_RETRY})
    await complete(off, ModelRequest(messages=HELLO.messages))
    await complete(on, ModelRequest(messages=HELLO.messages, max_output_tokens=8))
    await complete(on, ModelRequest(messages=HELLO.messages, max_output_tokens=3000))
    bodies = server.requests()
    assert ["thinking" in body for body in bodies] == [False, False, True]
    assert bodies[2]["thinking"] == {"type": "enabled", "budget_tokens": 2048}
