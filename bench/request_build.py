"""Request build time at a ~100k-token context, per wire: from the log entries to the bytes sent.

The log is a long tool loop (reasoning and each wire's round-trip details on every reply, about
400,000 characters). Timed in this thread's CPU time (the machine may be shared), median of 15:
the whole build with nothing kept (context assembly, the wire's body, the JSON encoding), and
the next call's build after one more exchange with the session's kept entries and the wire's
kept encodings (`harness.context_cache`, `harness.providers.encoding`). For reference, what the
SDK's own TypedDict transform of the same body costs, which every call paid before the body
was sent as bytes. Asserts nothing.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from _setup import ROOT

sys.path.insert(0, str(ROOT))

from harness.compaction.policy import Policy  # noqa: E402
from harness.context_cache import EntryCache  # noqa: E402
from harness.messages import LogEntry  # noqa: E402
from harness.providers.anthropic import AnthropicProvider  # noqa: E402
from harness.providers.base import CardConfig  # noqa: E402
from harness.providers.openai_chat import OpenAIChatProvider  # noqa: E402
from harness.providers.openai_responses import OpenAIResponsesProvider  # noqa: E402
from harness.runtime import session_context  # noqa: E402
from harness.state import SessionState  # noqa: E402
from harness.tokens import ESTIMATE  # noqa: E402
from harness.tools import builtin_tools  # noqa: E402

MODEL = "m"
ROUNDS = 100


def exchange(seq: int, n: int) -> list[LogEntry]:
    call = f"call_{n}"
    details = {
        "openai_responses": {"model": MODEL, "output": [
            {"type": "reasoning", "id": f"rs_{n}", "summary": [], "encrypted_content": "e" * 800},
            {"type": "function_call", "id": f"fc_{n}", "call_id": call}]},
        "anthropic": {"model": MODEL, "content": [
            {"type": "thinking", "thinking": "t" * 400, "signature": "s" * 400},
            {"type": "tool_use", "id": call}]},
    }  # fmt: skip
    return [
        LogEntry(seq=seq, kind="user", content=f"Step {n}: " + "please look at the next file. " * 40),
        LogEntry(seq=seq + 1, kind="assistant", content="Reading it.", data={
            "tool_calls": [{"id": call, "name": "read_entry", "arguments": json.dumps({"seq": n})}],
            "reasoning": "r" * 400, "provider_details": details}),
        LogEntry(seq=seq + 2, kind="tool_result", content="x = 1\n" * 400,
                 data={"call_id": call, "name": "read_entry"}),
    ]  # fmt: skip


def fresh(entries: list[LogEntry]) -> list[LogEntry]:
    """New objects, as every read from the database gives."""
    return [LogEntry(**json.loads(json.dumps(asdict(e)))) for e in entries]


def build(provider: Any, entries: list[LogEntry], cache: EntryCache | None) -> bytes:
    view = session_context(
        system_prompt="You are careful. " * 120,
        tools=[tool.spec for tool in builtin_tools().values()],
        capabilities=provider.capabilities,
        entries=entries,
        state=SessionState(),
        counter=ESTIMATE,
        policy=Policy(window=400_000, max_output_tokens=1000),
        cache=cache,
    )
    return bytes(provider.encoded(view.context.request(1000)))


def median_ms(run: Callable[[], Any], times: int = 15) -> float:
    spent = []
    for _ in range(times):
        began = time.thread_time()
        run()
        spent.append(time.thread_time() - began)
    return statistics.median(spent) * 1000


def sdk_transform_ms(wire: str, body: dict[str, Any]) -> float:
    if wire == "anthropic":
        from anthropic._utils import async_maybe_transform as transform
        from anthropic.types import message_create_params as params

        shape: Any = params.MessageCreateParamsStreaming
    elif wire == "openai_chat":
        from openai._utils import async_maybe_transform as transform
        from openai.types.chat import completion_create_params as chat

        shape = chat.CompletionCreateParamsStreaming
    else:
        from openai._utils import async_maybe_transform as transform
        from openai.types.responses import response_create_params as responses

        shape = responses.ResponseCreateParamsStreaming
    return median_ms(lambda: asyncio.run(transform(body, shape)), times=5)


def main() -> None:
    log = [entry for n in range(ROUNDS) for entry in exchange(1 + 3 * n, n)]
    more = log + exchange(1 + 3 * ROUNDS, ROUNDS)
    wires: dict[str, Callable[[], Any]] = {
        "openai_chat": lambda: OpenAIChatProvider(
            card=CardConfig(wire="openai_chat", model=MODEL, reasoning_replay="tool_turns")
        ),
        "openai_responses": lambda: OpenAIResponsesProvider(
            card=CardConfig(wire="openai_responses", model=MODEL)
        ),
        "anthropic": lambda: AnthropicProvider(card=CardConfig(wire="anthropic", model=MODEL)),
    }
    print(f"{ROUNDS} tool exchanges, {len(log)} entries; CPU ms of this thread, median of 15")
    print(f"{'wire':18}{'~tokens':>9}{'nothing kept':>14}{'next call':>11}{'SDK transform':>15}")
    for wire, make in wires.items():
        entries, later = fresh(log), fresh(more)
        cold = median_ms(lambda: build(make(), entries, None))  # noqa: B023
        provider, cache = make(), EntryCache()
        warm: list[float] = []
        for _ in range(15):
            build(provider, fresh(log), cache)
            began = time.thread_time()
            build(provider, later, cache)
            warm.append(time.thread_time() - began)
        sent = build(make(), later, None)
        body = make().body(json_request(provider, later))
        print(f"{wire:18}{len(sent) // 4:9,}{cold:14.2f}{statistics.median(warm) * 1000:11.2f}"
              f"{sdk_transform_ms(wire, body):15.1f}")  # fmt: skip


def json_request(provider: Any, entries: list[LogEntry]) -> Any:
    view = session_context(
        system_prompt="You are careful. " * 120,
        tools=[tool.spec for tool in builtin_tools().values()],
        capabilities=provider.capabilities,
        entries=entries,
        state=SessionState(),
        counter=ESTIMATE,
        policy=Policy(window=400_000, max_output_tokens=1000),
    )
    return view.context.request(1000)


if __name__ == "__main__":
    main()
