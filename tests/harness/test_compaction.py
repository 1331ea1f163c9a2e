"""Compaction through the real turn loop, with a model that summarises mechanically.

`Archivist` (harness.testing) keeps every line holding a MARKER in its summaries, so a
marker only survives if each summary request really holds the previous summary and the
span before the cut.
"""

from __future__ import annotations

from harness.compaction.cut import plan_cut
from harness.compaction.policy import Policy
from harness.compaction.prompts import request_tokens
from harness.context import SUMMARY_HEADER
from harness.loop import run_turn
from harness.messages import (
    AssistantMessage,
    LogEntry,
    ModelRequest,
    ModelResponse,
    ResponseDone,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from harness.runtime import Deps, TurnConfig
from harness.testing import Archivist, MemoryStore, RecordingEvents, prompt_size
from harness.tools import builtin_tools

WINDOW = 2_000


def policy(**overrides) -> Policy:
    values = {"window": WINDOW, "max_output_tokens": 100, "trigger": 0.8}
    return Policy(**{**values, **overrides})


def setup(provider, **overrides):
    store = MemoryStore()
    config = TurnConfig(
        session_id=1,
        system_prompt="You are terse.",
        max_steps=5,
        max_output_tokens=100,
        model="archivist",
        policy=policy(**overrides) if overrides.get("window", WINDOW) else policy(**overrides),
    )
    deps = Deps(store=store, events=RecordingEvents(), provider=provider, tools=builtin_tools())
    return store, config, deps


async def talk(store, config, deps, turns, *, start=1):
    for n in range(start, start + turns):
        text = f"Turn {n}: " + ("tool please " if n % 4 == 0 else "") + "filler text " * 40
        if n == 1:
            text = "Remember MARKER-ALPHA-7731 exactly. " + text
        await store.append(1, kind="user", content=text)
        await run_turn(config, deps)


def boundaries(store):
    return [e for e in store.entries if e.kind == "boundary"]


def assert_pairs(request: ModelRequest) -> None:
    open_calls: set[str] = set()
    for message in request.messages:
        if isinstance(message, ToolResultMessage):
            assert message.call_id in open_calls, f"a result without its call: {message.call_id}"
            open_calls.discard(message.call_id)
            continue
        assert not open_calls, f"calls without results: {open_calls}"
        if isinstance(message, AssistantMessage):
            open_calls = {c.id for c in message.tool_calls}


async def test_a_marker_survives_five_compactions_through_the_summary_chain():
    provider = Archivist()
    store, config, deps = setup(provider)
    turns = 1
    while len(boundaries(store)) < 5:
        await talk(store, config, deps, 1, start=turns)
        turns += 1
        assert turns < 200
    for boundary in boundaries(store):
        assert "MARKER-ALPHA-7731" in boundary.content
    last = provider.turn_requests[-1]
    summary = [m for m in last.messages if getattr(m, "text", "").startswith(SUMMARY_HEADER)]
    assert len(summary) == 1 and "MARKER-ALPHA-7731" in summary[0].text
    assert all(not getattr(m, "text", "").startswith("Remember MARKER") for m in last.messages)


async def test_no_compaction_request_holds_an_entry_before_the_previous_cut():
    provider = Archivist()
    store, config, deps = setup(provider)
    await talk(store, config, deps, 40)
    cuts = [b.data["first_kept_seq"] for b in boundaries(store)]
    assert len(cuts) >= 5
    by_text = {e.content: e.seq for e in store.entries if e.kind == "user"}
    for index, request in enumerate(provider.summary_requests[1:], start=0):
        previous_cut = cuts[index]
        for message in request.messages:
            seq = by_text.get(getattr(message, "text", None))
            assert seq is None or seq >= previous_cut, (seq, previous_cut)


async def test_no_request_splits_a_call_from_its_result():
    provider = Archivist()
    store, config, deps = setup(provider)
    await talk(store, config, deps, 40)
    assert any(isinstance(m, ToolResultMessage) for r in provider.requests for m in r.messages)
    for request in provider.requests:
        assert_pairs(request)
    for boundary in boundaries(store):
        kept = next(e for e in store.entries if e.seq == boundary.data["first_kept_seq"])
        assert kept.kind in ("user", "assistant")


async def test_the_compaction_request_extends_the_previous_turn_request():
    provider = Archivist()
    store, config, deps = setup(provider, window=8_000)  # a turn is small beside the window
    await talk(store, config, deps, 90)
    assert len(provider.summary_requests) >= 3
    for summary_request in provider.summary_requests:
        index = provider.requests.index(summary_request)
        previous = provider.requests[index - 1]
        assert summary_request.messages[: len(previous.messages)] == previous.messages
        assert summary_request.tools == previous.tools
        assert len(summary_request.messages) > len(previous.messages)


async def test_a_card_with_no_window_never_compacts():
    provider = Archivist()
    store, config, deps = setup(provider, window=None)
    await talk(store, config, deps, 30)
    assert boundaries(store) == []
    assert provider.summary_requests == []


async def test_opting_out_never_compacts():
    provider = Archivist()
    store, config, deps = setup(provider, auto=False)
    await talk(store, config, deps, 30)
    assert boundaries(store) == []


async def test_a_failing_summariser_does_not_stop_the_session():
    provider = Archivist(fail_summaries=True)
    store, config, deps = setup(provider)
    await talk(store, config, deps, 20)
    notices = [e for e in store.entries if e.kind == "notice"]
    assert notices and all(n.data["code"] == "compaction_failed" for n in notices)
    cleared = [b for b in boundaries(store) if b.data["trigger"] == "clear"]
    assert cleared, "the fallback clears old tool outputs"
    assert store.entries[-1].kind == "assistant", "the turns went on"
    assert 1 < len(provider.summary_requests) <= 20, "tried again, at most once per turn"
    last = provider.turn_requests[-1]
    assert any("Output cleared" in getattr(m, "text", "") for m in last.messages)


async def test_the_boundary_records_what_it_did():
    provider = Archivist()
    store, config, deps = setup(provider)
    await talk(store, config, deps, 12)
    boundary = boundaries(store)[0]
    data = boundary.data
    assert data["trigger"] == "auto"
    assert data["tokens_before"] >= config.policy.trigger_tokens
    assert data["tokens_after"] < data["tokens_before"]
    assert data["covers"][0] == 1 and data["covers"][1] == data["first_kept_seq"] - 1
    assert data["summariser"]["model"] == "archivist"
    assert data["usage"]["input_tokens"] > 0
    assert set(data["carried"]) == {"tasks", "timers", "questions", "subagents", "loaded_skills"}


def test_the_trigger_leaves_headroom_and_compact_at_only_moves_it_earlier():
    assert policy().trigger_tokens == 1_600
    assert policy(compact_at=0.5).trigger_tokens == 1_000
    assert policy(compact_at=1_200).trigger_tokens == 1_200
    assert policy(compact_at=0.95).trigger_tokens == 1_600
    assert policy(max_output_tokens=500).trigger_tokens == 2_000 - 500 - 200
    assert policy(window=None).trigger_tokens is None
    assert policy(window=None).why_not() == "the model card declares no context window"


def test_the_cut_keeps_whole_turns_and_never_splits_a_call():
    def e(seq, kind, tokens, **data):
        return LogEntry(seq=seq, kind=kind, content="", tokens=tokens, data=data)

    entries = [
        e(1, "user", 100),
        e(2, "assistant", 100, tool_calls=[{"id": "a", "name": "x", "arguments": "{}"}]),
        e(3, "tool_result", 100, call_id="a"),
        e(4, "assistant", 100),
        e(5, "user", 50),
        e(6, "assistant", 50, tool_calls=[{"id": "b", "name": "x", "arguments": "{}"}]),
        e(7, "tool_result", 50, call_id="b"),
        e(8, "assistant", 50),
    ]
    sizes = {entry.seq: entry.tokens for entry in entries}
    assert plan_cut(entries, 200, sizes) == 5
    assert plan_cut(entries, 120, sizes) == 8, "a turn too big alone is cut at a step"
    assert plan_cut(entries, 10_000, sizes) is None, "everything fits: nothing to fold"
    assert plan_cut(entries[:1], 10, sizes) is None


def test_a_long_tool_output_is_a_preview_with_the_seq_to_read():
    from harness.context import assemble

    call = {"id": "c1", "name": "x", "arguments": "{}"}
    entries = [
        LogEntry(seq=1, kind="user", content="go"),
        LogEntry(seq=2, kind="assistant", content="", data={"tool_calls": [call]}),
        LogEntry(seq=3, kind="tool_result", content="A" * 50 + "B" * 50, data={"call_id": "c1"}),
    ]
    context = assemble(system_prompt="", tools=[], entries=entries, preview_chars=50)
    text = context.messages[-1].text
    head, note, tail = text.split("\n")
    assert head == "A" * len(head) and tail == "B" * len(tail) and len(head) > len(tail)
    assert f'read_entry {{"seq": 3, "offset": {len(head)}}}' in note
    assert context.shortened == (3,)


async def test_a_window_declared_too_large_is_learned_from_the_overflow():
    provider = Archivist(limit=1_500)  # the card says 3,000
    store, config, deps = setup(provider, window=3_000)
    await talk(store, config, deps, 16)
    assert len(provider.refused) == 1, "refused once, then kept to what the server takes"
    learned = [e for e in store.entries if e.kind == "notice"]
    assert [e.data["code"] for e in learned] == ["window_learned"]
    assert learned[0].data["effective_window"] == 1_500
    assert boundaries(store), "the overflow compacted"
    assert boundaries(store)[0].data["reason"] == "overflow"
    assert (await store.state(1)).effective_window == 1_500
    turns = [e for e in store.entries if e.kind == "user"]
    replies = [e for e in store.entries if e.kind == "assistant"]
    assert len(replies) >= len(turns), "every turn was answered"
    for request in provider.requests:
        assert request in provider.refused or prompt_size(request) + 100 <= 1_500


async def test_an_overflow_without_a_window_tells_the_user_what_to_do():
    provider = Archivist(limit=1_000)
    store, config, deps = setup(provider, window=None)
    await talk(store, config, deps, 8)
    codes = [e.data["code"] for e in store.entries if e.kind == "notice"]
    assert "context_overflow" in codes
    assert boundaries(store) == []


def test_the_summary_instruction_takes_any_text_as_its_anchor():
    from harness.compaction.prompts import summary_request
    from harness.context import assemble

    context = assemble(system_prompt="s", tools=[], entries=[])
    request = summary_request(
        context,
        anchor='Use {"seq": 3} and {budget} literally',
        has_previous=False,
        budget=500,
        instructions="{keep} it",
        max_output_tokens=None,
    )
    text = request.messages[-1].text
    assert '«Use {"seq": 3} and {budget} literally»' in text
    assert "at most 500 tokens" in text and text.endswith("{keep} it")


async def test_clear_tool_results_clears_before_it_summarises():
    class Bulky(Archivist):
        """Every turn calls a tool whose output is large: clearing is enough."""

        async def stream(self, request):
            last = request.messages[-1]
            if isinstance(last, UserMessage) and last.text.startswith("Turn"):
                self.turn_requests.append(request)
                call = ToolCall(
                    id=f"b{len(self.turn_requests)}",
                    name="search_history",
                    arguments='{"query": "box"}',
                )
                usage = Usage(input_tokens=prompt_size(request), output_tokens=5)
                yield ResponseDone(response=ModelResponse(text="", tool_calls=(call,), usage=usage))
                return
            async for event in super().stream(request):
                yield event

    provider = Bulky()
    store, config, deps = setup(provider, clear_tool_results=True)
    for n in range(1, 9):
        await store.append(1, kind="user", content=f"Turn {n}: search for the box")
        await run_turn(config, deps)
    kinds = [b.data["trigger"] for b in boundaries(store)]
    assert kinds and kinds[0] == "clear", kinds
    first = boundaries(store)[0]
    assert first.data["tokens_after"] < config.policy.trigger_tokens
    assert len(provider.summary_requests) < len(kinds), "clearing spared a summary"
    last = provider.requests[-1]
    assert any("Output cleared" in getattr(m, "text", "") for m in last.messages)
    assert_pairs(last)


async def test_a_fold_too_big_for_the_window_sends_only_the_span_and_fits():
    provider = Archivist()
    store, config, deps = setup(provider)
    await talk(store, config, deps, 3)
    huge = "Remember MARKER-BIG-42. " + "an enormous paste of logs " * 140  # under the entry limit
    await store.append(1, kind="user", content=huge)
    await run_turn(config, deps)
    await talk(store, config, deps, 2, start=5)
    assert provider.summary_requests
    for request in provider.summary_requests:
        size = prompt_size(request) + (request.max_output_tokens or 0)
        assert size <= WINDOW, size  # as the provider counts it
        assert request.messages[-1].text.startswith("[Compaction]")
    span = [r for r in provider.summary_requests if "are not shown here" in r.messages[-1].text]
    assert span, "the oversized fold fell back to the span"
    assert any("MARKER-BIG-42" in b.content for b in boundaries(store))
    assert store.entries[-1].kind == "assistant", "the session goes on"
    assert not [e for e in store.entries if e.kind == "notice"]


def test_a_squeezed_request_fits_and_keeps_head_and_tail():
    from harness.compaction.prompts import squeezed
    from harness.messages import ModelRequest, SystemMessage

    big = "HEAD " + "middle " * 2000 + " TAIL"
    request = ModelRequest(
        messages=(
            SystemMessage(text="s"),
            UserMessage(text=big),
            UserMessage(text="short"),
            UserMessage(text="[Compaction] summarise"),
        ),
        max_output_tokens=100,
    )
    small = squeezed(request, 1_000)
    assert request_tokens(small) <= 1_000
    text = small.messages[1].text
    assert text.startswith("HEAD") and text.endswith("TAIL") and "characters left out" in text
    assert small.messages[2].text == "short" and small.messages[-1] == request.messages[-1]
