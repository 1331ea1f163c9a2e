"""The openai_responses wire against a scripted Responses API server process: the exact
request bodies it sends (encrypted reasoning replayed in place), what it makes of the stream."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from harness.messages import (
    AssistantMessage,
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
from harness.providers.base import CardConfig, ProviderError, RetryPolicy, complete
from harness.providers.openai_responses import OpenAIResponsesProvider, build

from .conftest import ScriptedServer

pytestmark = pytest.mark.contract

Start = Callable[[list[dict[str, Any]]], ScriptedServer]
FAST_RETRY = RetryPolicy(attempts=3, base_delay=0.001, max_delay=0.002)
HELLO = ModelRequest(
    messages=(SystemMessage(text="Be brief."), UserMessage(text="Hello")), max_output_tokens=33
)
WEATHER = ToolSpec(
    name="weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
ARGS = '{"city": "Paris"}'


def provider_for(server: ScriptedServer, model: str = "scripted") -> OpenAIResponsesProvider:
    card = CardConfig(wire="openai_responses", model=model, base_url=server.base_url)
    return build(card, {"timeout": 10.0, "retry": FAST_RETRY})


async def events_of(provider: OpenAIResponsesProvider, request: ModelRequest) -> list[StreamEvent]:
    return [event async for event in provider.stream(request)]


async def drain(stream: AsyncIterator[StreamEvent], seen: list[StreamEvent]) -> None:
    async for event in stream:
        seen.append(event)


def replayed(response: ModelResponse) -> AssistantMessage:
    """What the session stores and hands back: the response as an assistant message."""
    return AssistantMessage(
        text=response.text,
        tool_calls=response.tool_calls,
        reasoning=response.reasoning,
        provider_details=response.provider_details,
    )


async def test_the_wire_is_registered() -> None:
    card = CardConfig(wire="openai_responses", model="gpt-5")
    assert isinstance(build_provider(card), OpenAIResponsesProvider)


async def test_text_streams_usage_is_read_and_the_body_is_exact(responses_server: Start) -> None:
    usage = {"input_tokens": 40, "output_tokens": 6, "cached_tokens": 32}
    server = responses_server([{"text": "Hello there, traveller.", "usage": usage}])
    events = await events_of(provider_for(server), HELLO)
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert len(deltas) > 1 and "".join(deltas) == done.response.text == "Hello there, traveller."
    assert done.response.usage == Usage(input_tokens=40, output_tokens=6, cached_tokens=32)
    assert done.response.finish_reason == "stop"
    assert done.response.provider_details is None, "no reasoning: nothing to replay"
    assert server.requests() == [
        {
            "model": "scripted",
            "input": [{"role": "user", "content": "Hello"}],
            "instructions": "Be brief.",
            "store": False,
            "include": ["reasoning.encrypted_content"],
            "max_output_tokens": 33,
            "stream": True,
        }
    ]


async def test_a_reasoning_model_asks_for_a_summary(responses_server: Start) -> None:
    server = responses_server([{"text": "ok"}])
    await complete(provider_for(server, model="gpt-5-mini"), HELLO)
    assert server.requests()[0]["reasoning"] == {"summary": "auto"}


async def test_reasoning_and_calls_are_replayed_in_place_within_the_tool_loop(
    responses_server: Start,
) -> None:
    server = responses_server(
        [
            {"reasoning": "Need the weather.", "encrypted": "ENC-1",
             "tool_calls": [{"id": "call_1", "name": "weather", "arguments": ARGS}]},
            {"reasoning": "Now answer.", "encrypted": "ENC-2", "text": "Sunny, 22C."},
            {"text": "You're welcome."},
        ]
    )  # fmt: skip
    provider = provider_for(server)
    ask = UserMessage(text="Weather in Paris?")
    events = await events_of(provider, ModelRequest(messages=(ask,), tools=(WEATHER,)))
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "Need the weather."
    first = events[-1]
    assert isinstance(first, ResponseDone)
    assert first.response.tool_calls == (ToolCall(id="call_1", name="weather", arguments=ARGS),)
    assert first.response.finish_reason == "tool_calls"
    result = ToolResultMessage(call_id="call_1", name="weather", text="22C, sunny")
    loop = (ask, replayed(first.response), result)
    second = await complete(provider, ModelRequest(messages=loop, tools=(WEATHER,)))
    thanks = UserMessage(text="Thanks!")
    await complete(provider, ModelRequest(messages=(*loop, replayed(second), thanks)))

    bodies = server.requests()
    assert bodies[0]["tools"] == [
        {"type": "function", "name": "weather", "description": "The weather in a city.",
         "parameters": dict(WEATHER.parameters), "strict": False}
    ]  # fmt: skip
    reasoning_1 = {"id": "rs_1", "type": "reasoning", "encrypted_content": "ENC-1",
                   "summary": [{"type": "summary_text", "text": "Need the weather."}]}  # fmt: skip
    call_1 = {"type": "function_call", "id": "fc_1_1", "call_id": "call_1", "name": "weather",
              "arguments": ARGS}  # fmt: skip
    output_1 = {"type": "function_call_output", "call_id": "call_1", "output": "22C, sunny"}
    assert bodies[1]["input"] == [
        {"role": "user", "content": "Weather in Paris?"},
        reasoning_1,
        call_1,
        output_1,
    ]
    reasoning_2 = {"id": "rs_2", "type": "reasoning", "encrypted_content": "ENC-2",
                   "summary": [{"type": "summary_text", "text": "Now answer."}]}  # fmt: skip
    message_2 = {"type": "message", "id": "msg_2", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": "Sunny, 22C.", "annotations": []}]}  # fmt: skip
    assert bodies[2]["input"] == [
        {"role": "user", "content": "Weather in Paris?"},
        reasoning_1,
        call_1,
        output_1,
        reasoning_2,
        message_2,
        {"role": "user", "content": "Thanks!"},
    ]


async def test_another_models_reasoning_is_not_replayed(responses_server: Start) -> None:
    server = responses_server([{"reasoning": "Hm.", "encrypted": "ENC", "text": "Four."},
                               {"text": "ok"}])  # fmt: skip
    first = await complete(provider_for(server, model="model-a"), HELLO)
    assert first.provider_details is not None
    follow = (*HELLO.messages, replayed(first), UserMessage(text="And?"))
    await complete(provider_for(server, model="model-b"), ModelRequest(messages=follow))
    assert server.requests()[1]["input"] == [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Four."},
        {"role": "user", "content": "And?"},
    ]


async def test_an_error_result_is_marked(responses_server: Start) -> None:
    server = responses_server([{"text": "ok"}])
    call = ToolCall(id="c9", name="weather", arguments="{}")
    messages = (UserMessage(text="Go"), AssistantMessage(text="", tool_calls=(call,)),
                ToolResultMessage(call_id="c9", name="weather", text="no city", is_error=True))  # fmt: skip
    await complete(provider_for(server), ModelRequest(messages=messages))
    assert server.requests()[0]["input"][1:] == [
        {"type": "function_call", "call_id": "c9", "name": "weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c9", "output": "Error: no city"},
    ]


@pytest.mark.parametrize("broken", [{"cut": True}, {"malformed": True}, {"fail": "boom"}])
async def test_a_broken_stream_is_a_provider_error_and_no_response(
    responses_server: Start, broken: dict[str, Any]
) -> None:
    server = responses_server([{"text": "Partial answer here.", **broken}])
    seen: list[StreamEvent] = []
    with pytest.raises(ProviderError) as caught:
        await drain(provider_for(server).stream(HELLO), seen)
    assert not any(isinstance(e, ResponseDone) for e in seen), "nothing whole to store"
    assert any(isinstance(e, TextDelta) for e in seen), "it broke mid-stream"
    assert caught.value.code == "server_error"


async def test_an_output_cap_marks_the_reply_truncated(responses_server: Start) -> None:
    server = responses_server([{"text": "Long", "incomplete": True}])
    response = await complete(provider_for(server), HELLO)
    assert (response.text, response.finish_reason) == ("Long", "length")


async def test_a_rate_limit_is_retried_after_the_wait_the_server_asked(
    responses_server: Start,
) -> None:
    server = responses_server(
        [{"status": 429, "message": "Rate limit reached", "type": "requests",
          "code": "rate_limit_exceeded", "retry_after": 1}, {"text": "made it"}]
    )  # fmt: skip
    began = time.monotonic()
    response = await complete(provider_for(server), HELLO)
    assert response.text == "made it"
    assert time.monotonic() - began >= 1.0
    assert len(server.requests()) == 2


async def test_context_overflow_is_named_and_not_retried(responses_server: Start) -> None:
    message = (
        "Your input exceeds the context window of this model. Please adjust your input and "
        "try again."
    )
    server = responses_server([{"status": 400, "message": message,
                                "code": "context_length_exceeded"}, {"text": "never"}])  # fmt: skip
    with pytest.raises(ProviderError) as caught:
        await complete(provider_for(server), HELLO)
    assert caught.value.code == "context_length_exceeded"
    assert str(caught.value).startswith("HTTP 400: Your input exceeds the context window")
    assert len(server.requests()) == 1


async def test_a_bad_key_is_an_auth_error(responses_server: Start) -> None:
    server = responses_server([{"status": 401, "message": "Incorrect API key provided.",
                                "code": "invalid_api_key"}])  # fmt: skip
    with pytest.raises(ProviderError) as caught:
        await complete(provider_for(server), HELLO)
    assert (caught.value.code, str(caught.value)) == (
        "auth",
        "HTTP 401: Incorrect API key provided.",
    )


async def test_turns_and_the_compaction_request_read_their_prefix_from_the_cache(
    responses_server: Start,
) -> None:
    """Against the server's prefix-cache accounting (1,024 tokens at least, steps of 128)."""
    server = responses_server([{"text": "Noted: the figures add up.", "repeat": True}])
    provider = provider_for(server)
    messages: list[Any] = [SystemMessage(text="You are a careful assistant. " * 160)]
    usages: list[Usage] = []
    for turn in range(20):
        messages.append(UserMessage(text=f"Turn {turn}: " + "rows of figures, " * 40))
        response = await complete(provider, ModelRequest(messages=tuple(messages)))
        assert response.usage is not None
        usages.append(response.usage)
        messages.append(AssistantMessage(text=response.text))
    fold = ModelRequest(messages=(*messages, UserMessage(text="[Compaction] Summarise.")))
    folded = await complete(provider, fold)
    assert folded.usage is not None
    assert usages[0].cached_tokens == 0, "nothing is cached before the first call"
    assert all(u.cached_tokens >= 1024 and (u.cached_tokens - 1024) % 128 == 0 for u in usages[1:])
    assert all(u.cached_tokens < u.input_tokens for u in usages)
    assert folded.usage.cached_tokens > usages[-1].input_tokens - 128, "the fold reads the turn"
    other = ModelRequest(messages=(SystemMessage(text="Another prompt entirely. " * 60),))
    fresh = await complete(provider, other)
    assert fresh.usage is not None and fresh.usage.cached_tokens == 0, "no shared prefix"
