"""Incremental request building: a request built from the session's kept entries and kept
encodings is byte for byte the request built from nothing, on every wire, call after call, as
the log grows, the counter is recalibrated, entries are cut to head and tail, tool outputs are
cleared and a compaction boundary moves the cut; and the compaction request too.

The reference is independent of the caches: a fresh provider's `body()` (plain dicts, no
`Pieces`), encoded with the standard `json.dumps` the way the SDKs encode a body."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from typing import Any

import pytest

from harness.compaction.policy import Policy
from harness.compaction.prompts import summary_request
from harness.context_cache import EntryCache
from harness.messages import LogEntry, ModelRequest, UserMessage
from harness.providers.anthropic import AnthropicProvider
from harness.providers.base import CardConfig
from harness.providers.encoding import Pieces
from harness.providers.openai_chat import OpenAIChatProvider
from harness.providers.openai_responses import OpenAIResponsesProvider
from harness.runtime import SessionView, session_context
from harness.state import SessionState
from harness.tokens import ESTIMATE
from harness.tools import builtin_tools

MODEL = "m"
WIRES = {
    "openai_chat": lambda: OpenAIChatProvider(
        card=CardConfig(wire="openai_chat", model=MODEL, reasoning_replay="tool_turns")
    ),
    "openai_responses": lambda: OpenAIResponsesProvider(
        card=CardConfig(wire="openai_responses", model=MODEL)
    ),
    "anthropic": lambda: AnthropicProvider(card=CardConfig(wire="anthropic", model=MODEL)),
}
WINDOW = 16_000  # an entry over half of it (8,000 tokens) is cut to head and tail
Provider = OpenAIChatProvider | OpenAIResponsesProvider | AnthropicProvider


def reference(request: ModelRequest, wire: str) -> bytes:
    body = WIRES[wire]().body(request)
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def turn(seq: int, n: int) -> list[LogEntry]:
    """A user message, a reply calling a tool (with reasoning and each wire's details), the
    result (every seventh one far too large to show whole), and the final reply."""
    call = f"call_{n}"
    details = {
        "openai_responses": {"model": MODEL, "output": [
            {"type": "reasoning", "id": f"rs_{n}", "summary": [], "encrypted_content": "e" * 50},
            {"type": "function_call", "id": f"fc_{n}", "call_id": call}]},
        "anthropic": {"model": MODEL, "content": [
            {"type": "thinking", "thinking": "hm", "signature": "s" * 40},
            {"type": "tool_use", "id": call}]},
    }  # fmt: skip
    output = ("line é ✓\n" * 5_000) if n % 7 == 3 else f"output {n} " * 30
    said = f'Step {n}: look at file {n}, "quoted" ✓.'
    if n == 1:  # fits at the first calibration, too large from the second on
        said += " paste" * 5_200
    return [
        LogEntry(seq=seq, kind="user", content=said),
        LogEntry(seq=seq + 1, kind="assistant", content="", data={
            "tool_calls": [{"id": call, "name": "read_entry", "arguments": json.dumps({"seq": n})}],
            "reasoning": f"thinking about {n}", "provider_details": details}),
        LogEntry(seq=seq + 2, kind="tool_result", content=output,
                 data={"call_id": call, "name": "read_entry"}),
        LogEntry(seq=seq + 3, kind="assistant", content=f"File {n} is fine."),
    ]  # fmt: skip


def boundary(seq: int, cut: int, cleared: int) -> LogEntry:
    carried = {"tasks": [{"status": "doing", "text": "check the files"}]}
    return LogEntry(seq=seq, kind="boundary", content="Files 0-5 were read; all fine.",
                    data={"first_kept_seq": cut, "cleared_before": cleared, "carried": carried})  # fmt: skip


def view(entries: list[LogEntry], calls: int, cache: EntryCache | None) -> SessionView:
    return session_context(
        system_prompt="You are careful.",
        tools=[tool.spec for tool in builtin_tools().values()],
        capabilities=WIRES["openai_chat"]().capabilities,
        entries=entries,
        state=SessionState(calibration=1.0 + (calls // 3) / 10, calibrated_on=calls),
        counter=ESTIMATE,
        policy=Policy(window=WINDOW, max_output_tokens=500),
        cache=cache,
    )


def context_entries(log: list[LogEntry], fresh: bool = True) -> list[LogEntry]:
    """As the stores read it: the latest boundary and the entries from its cut on, each a
    new object, as a whole read from the database gives (`fresh`), or the same objects from
    call to call, as the context read on from the last read gives."""
    last = next((e for e in reversed(log) if e.kind == "boundary"), None)
    cut = int(last.data["first_kept_seq"]) if last else 0
    read = [LogEntry(**json.loads(json.dumps(asdict(e)))) for e in log] if fresh else log
    return [
        e
        for e in read
        if e.seq == (last.seq if last else -1) or (e.seq >= cut and e.kind != "boundary")
    ]


@pytest.mark.parametrize("fresh", [True, False], ids=["read-whole", "read-on"])
@pytest.mark.parametrize("wire", list(WIRES))
def test_a_cached_build_is_byte_for_byte_the_uncached_one_across_a_boundary(
    wire: str, fresh: bool
) -> None:
    provider = WIRES[wire]()
    cache = EntryCache()
    log: list[LogEntry] = []
    calls = 0
    for n in range(16):
        log += turn(len(log) + 1, n)
        if n == 9:
            log.append(boundary(len(log) + 1, cut=21, cleared=31))
        for upto in (len(log) - 2, len(log)):  # mid-loop (the tool loop open) and after
            entries = context_entries(log[:upto], fresh)
            cached, plain = view(entries, calls, cache), view(entries, calls, None)
            calls += 1
            assert cached.context.tokens == plain.context.tokens  # summed, not made
            assert cached.context.estimate == plain.context.estimate
            assert cached.context == plain.context
            request = cached.context.request(500)
            assert provider.encoded(request) == reference(plain.context.request(500), wire)
        if n == 1:
            assert 5 in cached.context.shortened, "the paste is cut once recalibrated"
    assert cached.context.shortened, "the large outputs are shown as head and tail"
    summary = summary_args(cached)
    assert provider.encoded(summary_request(cached.context, **summary)) == reference(
        summary_request(plain.context, **summary), wire
    )


def summary_args(view: SessionView) -> dict[str, Any]:
    return {"anchor": None, "has_previous": True, "budget": 400, "instructions": None,
            "max_output_tokens": 500}  # fmt: skip


@pytest.mark.parametrize("wire", list(WIRES))
def test_the_next_request_encodes_only_its_new_messages(wire: str) -> None:
    provider: Any = WIRES[wire]()
    cache = EntryCache()
    log = turn(1, 0) + turn(5, 1)
    first = view(context_entries(log), 0, cache).context
    provider.encoded(first.request(500))
    kept = len(provider._pieces)
    log += turn(9, 2)
    second = view(context_entries(log), 0, cache).context
    assert all(a is b for a, b in zip(first.messages, second.messages, strict=False))
    provider.encoded(second.request(500))
    new = len(second.messages) - len(first.messages)
    flipped = 1  # the reply whose reasoning was replayed in its tool loop, now past it
    assert len(provider._pieces) - kept <= new + flipped


def test_kept_encodings_and_entries_stay_bounded() -> None:
    pieces = Pieces(max_items=3, max_bytes=10)
    messages = [UserMessage(text=str(n)) for n in range(5)]
    for message in messages:
        pieces.get(message, None, lambda m=message: (m.text.encode() * 3,))  # type: ignore[misc]
    assert len(pieces) == 3 and pieces.size == 9
    pieces.get(messages[4], "other", lambda: (b"x" * 8,))
    assert pieces.size <= 10 and len(pieces) == 1
    cache = EntryCache()
    log = [entry for n in range(40) for entry in turn(1 + 4 * n, n)]
    view(context_entries(log), 0, cache)
    recent = log[-8:]
    view(context_entries(recent), 0, cache)
    assert set(cache.kept) == {e.seq for e in recent}


def test_the_next_call_makes_only_its_new_entries_even_recalibrated(monkeypatch) -> None:
    """The context read on from the last read hands the same entry objects: the next call
    looks at the new entries alone, under a new calibration too, and still sums true."""
    from harness import context

    made: list[int] = []
    shown = context.cached_shown
    monkeypatch.setattr(
        context,
        "cached_shown",
        lambda cache, entry, v: made.append(entry.seq) or shown(cache, entry, v),
    )
    cache = EntryCache()
    # (No output over the entry limit: one would make every entry's form depend on the count.)
    log = [entry for n in range(2, 30) if n % 7 != 3 for entry in turn(1 + 4 * n, n)]
    view(context_entries(log, fresh=False), 0, cache)
    assert len(made) == len(log)
    made.clear()
    log += turn(1 + 4 * 30, 30)
    grown = view(context_entries(log, fresh=False), 7, cache)  # another calibration
    assert made == [e.seq for e in log[-4:]]
    assert grown.context == view(context_entries(log), 7, None).context


@pytest.mark.parametrize("wire", list(WIRES))
def test_the_tools_are_encoded_once_and_another_set_is_encoded_anew(wire: str) -> None:
    provider: Any = WIRES[wire]()
    request = view(context_entries(turn(1, 0)), 0, EntryCache()).context.request(500)
    assert provider.encoded(request) == reference(request, wire)
    assert provider.encoded(request) == reference(request, wire)  # the kept encoding
    fewer = replace(request, tools=request.tools[1:])
    assert provider.encoded(fewer) == reference(fewer, wire)
    assert provider.encoded(fewer) != provider.encoded(request)
    none = replace(request, tools=())
    assert provider.encoded(none) == reference(none, wire)


def test_a_joined_body_grows_from_the_last_one_only_when_it_begins_with_it() -> None:
    """`Pieces.joined`: a conversation that grew by its end makes only its new messages; a
    key or a message changed before its end, or a shorter conversation, is joined anew."""
    pieces = Pieces()
    made: list[Any] = []

    def make(message: Any, key: Any) -> tuple[bytes, ...]:
        made.append(message)
        text = message.text.encode()
        return () if text == b"-" else (b"*" + text,) if key else (text, text.upper())

    ms = [UserMessage(text=t) for t in ("a", "b", "-", "c", "d", "e")]
    never = (False,) * 6
    assert pieces.joined(ms[:4], never[:4], make) == b"a,A,b,B,c,C"
    made.clear()
    assert pieces.joined(ms, never, make) == b"a,A,b,B,c,C,d,D,e,E"
    assert made == ms[4:], "only the new messages"
    made.clear()
    flipped = (False,) * 3 + (True,) * 3
    assert pieces.joined(ms, flipped, make) == b"a,A,b,B,*c,*d,*e"
    assert made == ms, "a key changed: joined anew"
    replaced = [*ms[:2], UserMessage(text="x"), *ms[3:]]
    assert pieces.joined(replaced, never, make) == b"a,A,b,B,x,X,c,C,d,D,e,E"
    assert pieces.joined(ms[:2], never[:2], make) == b"a,A,b,B"
    equal = [ms[0], UserMessage(text="b"), ms[2]]  # equal messages encode alike
    made.clear()
    assert pieces.joined(equal, never[:3], make) == b"a,A,b,B"
    assert made == [ms[2]]
    assert pieces.joined([], (), make) == b""


def test_the_next_call_sums_its_tokens_over_its_new_blocks_alone(monkeypatch) -> None:
    """Read on, the blocks kept from the last call are summed from that call's sums: the
    next call scales its new blocks' estimates, not every block in context again."""
    from harness.tokens import Estimate

    scaled: list[int] = []
    scale = Estimate.scaled_sum

    def counted(self, raws):
        raws = list(raws)
        scaled.extend(raws)
        return scale(self, raws)

    monkeypatch.setattr(Estimate, "scaled_sum", counted)
    cache = EntryCache()
    log = [entry for n in range(2, 60) for entry in turn(1 + 4 * n, n)]
    for extra in range(3):  # the sums of the last call are known to the next
        log += turn(1 + 4 * (60 + extra), 60 + extra)
        first = view(context_entries(log, fresh=False), 0, cache).context
        assert first.tokens == view(context_entries(log), 0, None).context.tokens
    log += turn(1 + 4 * 70, 70)
    grown = view(context_entries(log, fresh=False), 0, cache).context
    scaled.clear()
    total, estimate = grown.tokens, grown.estimate
    assert 0 < len(scaled) <= 8 < len(grown.blocks)  # the new blocks' (an open loop's at most)
    plain = view(context_entries(log), 0, None).context
    assert (total, estimate) == (plain.tokens, plain.estimate)


def test_a_scaled_sum_is_the_sum_of_the_scaled_counts() -> None:
    import random

    from harness.tokens import Estimate

    chance = random.Random(7)
    for _ in range(200):
        counter = Estimate(ratio=chance.choice([1.0, chance.uniform(0.3, 3.0)]))
        raws = [chance.randrange(0, 5000) for _ in range(chance.randrange(0, 50))]
        assert counter.scaled_sum(iter(raws)) == sum(map(counter.scaled, raws))
