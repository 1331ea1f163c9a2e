"""The openai_chat wire against a scripted server process: what it sends, what it makes of replies."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from harness.messages import (
    AssistantMessage,
    ModelRequest,
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
    CardConfig,
    ProviderError,
    ReplayRule,
    RetryPolicy,
    complete,
)
from harness.providers.openai_chat import OpenAIChatProvider, build

from .conftest import ScriptedServer

pytestmark = pytest.mark.contract

Start = Callable[[list[dict[str, Any]]], ScriptedServer]
FAST_RETRY = RetryPolicy(attempts=3, base_delay=0.001, max_delay=0.002)
HELLO = ModelRequest(messages=(SystemMessage(text="Be brief."), UserMessage(text="Hello")))
WEATHER = ToolSpec(
    name="weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def provider_for(server: ScriptedServer) -> OpenAIChatProvider:
    card = CardConfig(wire="openai_chat", model="scripted", base_url=server.base_url)
    return build(card, {"timeout": 10.0, "retry": FAST_RETRY})


async def events_of(provider: OpenAIChatProvider, request: ModelRequest) -> list[StreamEvent]:
    return [event async for event in provider.stream(request)]


async def test_streamed_deltas_join_to_the_text_and_usage_is_read(scripted_server: Start) -> None:
    usage = {"prompt_tokens": 11, "completion_tokens": 6, "total_tokens": 17,
             "prompt_tokens_details": {"cached_tokens": 4}}  # fmt: skip
    server = scripted_server([{"text": "Hello there, traveller.", "usage": usage}])
    events = await events_of(provider_for(server), HELLO)
    deltas = [event.text for event in events if isinstance(event, TextDelta)]
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert len(deltas) > 1
    assert "".join(deltas) == done.response.text == "Hello there, traveller."
    assert done.response.usage == Usage(input_tokens=11, output_tokens=6, cached_tokens=4)
    assert done.response.finish_reason == "stop"


async def test_chunks_of_nonsense_shapes_are_ignored_and_the_sane_parts_kept(
    scripted_server: Start,
) -> None:
    """Each value of a wrong type is taken as absent: no crash, nothing of it in the reply."""
    text = lambda delta, **extra: {"choices": [{"index": 0, "delta": delta, **extra}]}  # noqa: E731
    chunks = [
        "a string, not a chunk", 7, None, [], {"choices": "many"}, {"choices": [None, 3]},
        text(None), text({"content": 42}), text({"content": ["x"]}), text({"role": "assistant"}),
        text({"content": "Hello"}), text({"reasoning_content": {"deep": True}}),
        text({"tool_calls": "call it"}), text({"tool_calls": [7, None]}),
        text({"tool_calls": [{"index": "first", "function": "weather"}]}),
        text({"content": " there."}, finish_reason=12),
        {"choices": [], "usage": {"prompt_tokens": "eleven", "completion_tokens": 2}},
        {"choices": [], "usage": "lots"},
        text({}, finish_reason="stop"),
    ]  # fmt: skip
    server = scripted_server([{"chunks": chunks}])
    events = await events_of(provider_for(server), HELLO)
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello", " there."]
    assert not [e for e in events if isinstance(e, ReasoningDelta)]
    assert done.response.text == "Hello there."
    assert done.response.finish_reason == "stop"
    assert done.response.usage is None
    # The fragments that were objects make one call with nothing usable in it.
    assert [(c.id, c.name, c.arguments) for c in done.response.tool_calls] == [("call_0", "", "")]


async def test_calls_reuse_one_connection(scripted_server: Start) -> None:
    """The body is read past `[DONE]`, so the connection goes back to the pool (the SDK alone
    closed it, and every call connected anew)."""
    server = scripted_server([{"text": "Again.", "repeat": True}])
    provider = provider_for(server)
    for _ in range(3):
        events = await events_of(provider, HELLO)
        assert isinstance(events[-1], ResponseDone)
    assert server.connections() == 1


async def test_the_request_carries_messages_cap_and_usage_option(scripted_server: Start) -> None:
    server = scripted_server([{"text": "ok"}])
    await complete(
        provider_for(server), ModelRequest(messages=HELLO.messages, max_output_tokens=33)
    )
    [sent] = server.requests()
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hello"},
    ]
    assert sent["max_tokens"] == 33
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert "tools" not in sent


async def test_no_usage_from_the_server_gives_none(scripted_server: Start) -> None:
    server = scripted_server([{"text": "ok", "usage": None}])
    response = await complete(provider_for(server), HELLO)
    assert response.usage is None


async def test_tool_call_fragments_are_assembled(scripted_server: Start) -> None:
    arguments = '{"city": "Paris", "unit": "celsius"}'
    call = {"id": "call_abc", "name": "weather", "arguments": arguments}
    server = scripted_server([{"text": "", "tool_calls": [call]}])
    request = ModelRequest(messages=(UserMessage(text="Weather?"),), tools=(WEATHER,))
    response = await complete(provider_for(server), request)
    assert response.tool_calls == (ToolCall(id="call_abc", name="weather", arguments=arguments),)
    assert response.finish_reason == "tool_calls"
    [sent] = server.requests()
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "The weather in a city.",
                "parameters": dict(WEATHER.parameters),
            },
        }
    ]


async def test_tool_results_go_back_with_role_tool_and_call_id(scripted_server: Start) -> None:
    server = scripted_server([{"text": "Sunny."}])
    call = ToolCall(id="call_abc", name="weather", arguments='{"city": "Paris"}')
    request = ModelRequest(
        messages=(
            UserMessage(text="Weather?"),
            AssistantMessage(text="", tool_calls=(call,)),
            ToolResultMessage(call_id="call_abc", name="weather", text="22C, sunny"),
        ),
        tools=(WEATHER,),
    )
    await complete(provider_for(server), request)
    [sent] = server.requests()
    assistant, result = sent["messages"][1:]
    assert assistant["tool_calls"] == [
        {"id": "call_abc", "type": "function",
         "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}
    ]  # fmt: skip
    assert result == {"role": "tool", "tool_call_id": "call_abc", "content": "22C, sunny"}


async def test_reasoning_is_shown_but_never_sent_back(scripted_server: Start) -> None:
    server = scripted_server([{"reasoning": "Think it through.", "text": "Four."}, {"text": "ok"}])
    provider = provider_for(server)
    events = await events_of(provider, HELLO)
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert reasoning == "Think it through."
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.reasoning == "Think it through."
    replay = AssistantMessage(text=done.response.text, reasoning=done.response.reasoning)
    await complete(
        provider, ModelRequest(messages=(*HELLO.messages, replay, UserMessage(text="And?")))
    )
    sent = server.requests()[1]["messages"][2]
    assert sent == {"role": "assistant", "content": "Four."}
    assert "Think it through" not in str(server.requests()[1])


def replay_card(server: ScriptedServer, rule: ReplayRule) -> OpenAIChatProvider:
    card = CardConfig(
        wire="openai_chat", model="scripted", base_url=server.base_url, reasoning_replay=rule
    )
    return build(card, {"timeout": 10.0, "retry": FAST_RETRY})


TOOL_LOOP_CALL = ToolCall(id="c1", name="weather", arguments='{"city": "Paris"}')
EARLIER = (
    UserMessage(text="Hi"),
    AssistantMessage(text="Hello.", reasoning="Greet back."),
    UserMessage(text="Weather?"),
    AssistantMessage(text="", tool_calls=(TOOL_LOOP_CALL,), reasoning="Need the tool."),
    ToolResultMessage(call_id="c1", name="weather", text="22C"),
)


@pytest.mark.parametrize(
    ("rule", "replayed"),
    [("never", [None, None]), ("tool_turns", [None, "Need the tool."]),
     ("always", ["Greet back.", "Need the tool."])],
)  # fmt: skip
async def test_reasoning_goes_back_as_reasoning_content_where_the_card_rule_says(
    scripted_server: Start, rule: ReplayRule, replayed: list[str | None]
) -> None:
    server = scripted_server([{"text": "Sunny."}])
    provider = replay_card(server, rule)
    assert provider.capabilities.reasoning_replay == (rule != "never")
    await complete(provider, ModelRequest(messages=EARLIER, tools=(WEATHER,)))
    [sent] = server.requests()
    assistants = [m for m in sent["messages"] if m["role"] == "assistant"]
    assert [m.get("reasoning_content") for m in assistants] == replayed
    assert assistants[1] == {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "c1", "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}],
        **({"reasoning_content": "Need the tool."} if replayed[1] else {}),
    }  # fmt: skip


@pytest.mark.parametrize("broken", [{"cut": True}, {"malformed": True}])
async def test_a_broken_stream_is_a_provider_error_and_no_response(
    scripted_server: Start, broken: dict[str, Any]
) -> None:
    server = scripted_server([{"text": "Partial answer here.", **broken}])
    seen: list[StreamEvent] = []
    with pytest.raises(ProviderError) as caught:
        await drain(provider_for(server).stream(HELLO), seen)
    assert not any(isinstance(e, ResponseDone) for e in seen), "nothing whole to store"
    assert caught.value.code == "server_error"


async def drain(stream: AsyncIterator[StreamEvent], seen: list[StreamEvent]) -> None:
    async for event in stream:
        seen.append(event)


async def test_rate_limit_then_success_is_retried(scripted_server: Start) -> None:
    server = scripted_server([{"status": 429, "message": "slow down"}, {"text": "made it"}])
    response = await complete(provider_for(server), HELLO)
    assert response.text == "made it"
    assert len(server.requests()) == 2


async def test_server_errors_on_every_attempt_give_server_error(scripted_server: Start) -> None:
    server = scripted_server([{"status": 500, "message": "boom"}] * FAST_RETRY.attempts)
    with pytest.raises(ProviderError) as caught:
        await complete(provider_for(server), HELLO)
    assert caught.value.code == "server_error"
    assert caught.value.retryable
    assert len(server.requests()) == FAST_RETRY.attempts


async def test_context_overflow_is_named_and_not_retried(scripted_server: Start) -> None:
    message = "This model's maximum context length is 8192 tokens."
    server = scripted_server([{"status": 400, "message": message}, {"text": "never"}])
    with pytest.raises(ProviderError) as caught:
        await complete(provider_for(server), HELLO)
    assert caught.value.code == "context_length_exceeded"
    assert not caught.value.retryable
    assert len(server.requests()) == 1


async def test_an_overflow_keeps_its_words_and_numbers_and_the_status(
    scripted_server: Start,
) -> None:
    message = (
        "This model's maximum context length is 8192 tokens. However, you requested 9001 "
        "tokens (8001 in the messages, 1000 in the completion)."
    )
    server = scripted_server([{"status": 400, "message": message}])
    with pytest.raises(ProviderError) as caught:
        await complete(provider_for(server), HELLO)
    assert str(caught.value) == f"HTTP 400: {message}"
    assert caught.value.code == "context_length_exceeded"


async def test_an_error_shows_the_status_and_message_never_the_raw_body(
    scripted_server: Start,
) -> None:
    secret_page = "<html>internal admin console: db password hunter2</html>"
    long_message = "x" * 5000
    server = scripted_server(
        [{"status": 404, "raw": secret_page}, {"status": 400, "message": long_message}]
    )
    with pytest.raises(ProviderError) as caught:
        await complete(provider_for(server), HELLO)
    assert str(caught.value) == "HTTP 404: (no JSON error message)"
    assert "hunter2" not in str(caught.value)
    with pytest.raises(ProviderError) as caught:
        await complete(provider_for(server), HELLO)
    assert str(caught.value).startswith("HTTP 400: xxx")
    assert len(str(caught.value)) < 500
    assert "scripted_error" not in str(caught.value), "the body's other fields stay out"


async def test_other_client_errors_are_bad_requests(scripted_server: Start) -> None:
    server = scripted_server([{"status": 400, "message": "unknown field"}])
    with pytest.raises(ProviderError) as caught:
        await complete(provider_for(server), HELLO)
    assert caught.value.code == "bad_request"


async def test_a_refused_connection_is_a_retryable_connection_error() -> None:
    card = CardConfig(wire="openai_chat", model="x", base_url="http://127.0.0.1:9/v1")
    provider = build(card, {"timeout": 5.0, "retry": RetryPolicy(attempts=1)})
    with pytest.raises(ProviderError) as caught:
        await complete(provider, HELLO)
    assert caught.value.code == "connection"
    assert caught.value.retryable
