"""What a refusal says, and what a person pinned, are both kept."""

from __future__ import annotations

import pytest

from harness.compaction.policy import Policy
from harness.loop import run_turn
from harness.messages import ModelResponse, ResponseDone
from harness.providers.overflow import is_overflow, read_overflow
from harness.runtime import Deps, TurnConfig
from harness.testing import Archivist, MemoryStore, RecordingEvents
from harness.tools import builtin_tools

PHRASINGS = [  # (server, its words, the limit, the prompt)
    (
        "OpenAI",
        "HTTP 400: This model's maximum context length is 8192 tokens. However, your messages "
        "resulted in 9336 tokens. Please reduce the length of the messages. "
        "(context_length_exceeded)",
        8192,
        9336,
    ),
    (
        "vLLM",
        "HTTP 400: This model's maximum context length is 4096 tokens. However, you requested "
        "5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length "
        "of the messages or completion.",
        4096,
        4000,
    ),
    (
        "vLLM, newer",
        "HTTP 400: This model's maximum context length is 2048 tokens. However, your request "
        "has 3000 input tokens. Please reduce the length of the input messages.",
        2048,
        3000,
    ),
    (
        "llama.cpp server",
        "HTTP 400: request (4476 tokens) exceeds the available context size (4096 tokens), try "
        "increasing it (exceed_context_size_error) (n_prompt_tokens: 4476, n_ctx: 4096)",
        4096,
        4476,
    ),
    (
        "llama-cpp-python",
        "Requested tokens (3799) exceed context window of 2048",
        2048,
        3799,
    ),
    (
        "Anthropic",
        "HTTP 400: prompt is too long: 208310 tokens > 200000 maximum",
        200000,
        208310,
    ),
    (
        "OpenAI Responses",
        "HTTP 400: Your input exceeds the context window of this model. Please adjust your "
        "input and try again.",
        None,
        None,
    ),
]


@pytest.mark.parametrize(("server", "words", "limit", "prompt"), PHRASINGS)
def test_each_server_s_overflow_is_read_for_its_limit_and_prompt(server, words, limit, prompt):
    assert is_overflow(words), server
    figures = read_overflow(words)
    assert (figures.limit, figures.prompt) == (limit, prompt), server


def test_other_refusals_are_not_overflows():
    assert not is_overflow("HTTP 400: Invalid value for 'temperature': must be at most 2.")
    assert not is_overflow("HTTP 401: Incorrect API key provided.")


def setup(provider):
    store = MemoryStore()
    config = TurnConfig(
        session_id=1,
        system_prompt="You are terse.",
        max_steps=3,
        max_output_tokens=100,
        model="archivist",
        policy=Policy(window=2_000, max_output_tokens=100, declared_window=2_000),
    )
    deps = Deps(store=store, events=RecordingEvents(), provider=provider, tools=builtin_tools())
    return store, config, deps


async def talk(store, config, deps, turns, start=1):
    for n in range(start, start + turns):
        await store.append(1, kind="user", content=f"Turn {n} MARKER-{n}: " + "filler " * 70)
        await run_turn(config, deps)


async def test_a_pinned_summary_is_carried_verbatim_and_the_summariser_writes_the_rest():
    provider = Archivist()
    store, config, deps = setup(provider)
    await talk(store, config, deps, 6)
    first = [e for e in store.entries if e.kind == "boundary"][-1]
    pinned = "The user's rule: never touch /etc/horsie.conf. Deploys go out on Fridays."
    await store.append(
        1,
        kind="boundary",
        content=pinned,
        data={**first.data, "trigger": "edit", "pinned": pinned, "edited_from": first.seq},
    )
    await talk(store, config, deps, 8, start=7)
    later = [e for e in store.entries if e.kind == "boundary" and e.seq > first.seq + 1]
    assert later, "compacted again after the edit"
    for boundary in later:
        assert boundary.content.startswith(pinned), boundary.content[:120]
        assert boundary.data["pinned"] == pinned
    instruction = provider.summary_requests[-1].messages[-1].text
    assert "a person's text" in instruction and "do not repeat" in instruction


class Verbose(Archivist):
    """A summariser that ignores its output cap."""

    async def stream(self, request):
        if getattr(request.messages[-1], "text", "").startswith("[Compaction]"):
            self.summary_requests.append(request)
            text = "An endless summary. " * 400
            yield ResponseDone(response=ModelResponse(text=text))
            return
        async for event in super().stream(request):
            yield event


async def test_a_summary_far_over_its_budget_is_a_failure_not_a_stored_summary():
    provider = Verbose()
    store, config, deps = setup(provider)
    await talk(store, config, deps, 8)
    folded = [e for e in store.entries if e.kind == "boundary" and e.data["trigger"] != "clear"]
    assert folded == [], "no bad summary stored"
    codes = [e.data["code"] for e in store.entries if e.kind == "notice"]
    assert "compaction_failed" in codes
    per_turn = codes.count("compaction_failed")
    assert per_turn <= 8, "at most one compaction_failed a turn"
    assert store.entries[-1].kind == "assistant", "the session goes on"
