"""Context assembly: what the model is handed on each call, as a pure function of values.

The order is fixed so the provider's prompt-cache prefix stays stable from call to call:
the system block (the system prompt, then the tool list); then, when the session has
compacted, the latest boundary's summary and the durable state it carried, verbatim; then
the verbatim entries from the boundary's cut, in log order. A tool output the boundary
cleared is a stub that says how to read it back, and one longer than `preview_chars` is
shown as its head plus the seq to read the rest. Each block carries its token count so the same value answers
`GET /context`, feeds the context meter and becomes the model request. A tool call is never
separated from its result: a call whose result is missing (a crash mid-tool) gets an error
result, and a result whose call is not in view is left out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, assert_never

from harness.messages import (
    AssistantMessage,
    LogEntry,
    Message,
    ModelRequest,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from harness.tokens import estimate_tokens

BlockKind = Literal["system", "memory", "summary", "state", "entry"]
MISSING_RESULT = "No result was recorded for this call (the turn was interrupted)."
PREVIEW_CHARS = 8_000
SUMMARY_HEADER = "[Summary of the session before this point, written at compaction]"
STATE_HEADER = "[Durable state carried over at compaction, verbatim]"


@dataclass(frozen=True, kw_only=True)
class Block:
    kind: BlockKind
    role: str
    text: str
    tokens: int
    seq: int | None = None


@dataclass(frozen=True, kw_only=True)
class Context:
    blocks: tuple[Block, ...]
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]

    @property
    def tokens(self) -> int:
        return sum(block.tokens for block in self.blocks)

    def request(self, max_output_tokens: int | None) -> ModelRequest:
        return ModelRequest(
            messages=self.messages, tools=self.tools, max_output_tokens=max_output_tokens
        )


def assemble(
    *,
    system_prompt: str,
    tools: Sequence[ToolSpec],
    entries: Sequence[LogEntry],
    preview_chars: int = PREVIEW_CHARS,
) -> Context:
    """`entries` are the log from the latest cut on (plus the latest boundary, wherever it is)."""
    blocks: list[Block] = []
    messages: list[Message] = []
    if system_prompt:
        blocks.append(system_block(system_prompt))
        messages.append(SystemMessage(text=system_prompt))
    if tools:
        blocks.append(tools_block(tools))
    boundary = latest_boundary(entries)
    if boundary is not None:
        for block in boundary_blocks(boundary):
            blocks.append(block)
            messages.append(UserMessage(text=block.text))
    cut = int(boundary.data.get("first_kept_seq", 0)) if boundary else 0
    cleared = int(boundary.data.get("cleared_before", 0)) if boundary else 0
    visible = [e for e in entries if e.seq >= cut]
    for entry, message in paired(entry_messages(visible, cleared, preview_chars)):
        messages.append(message)
        blocks.append(entry_block(entry, message))
    return Context(blocks=tuple(blocks), messages=tuple(messages), tools=tuple(tools))


def latest_boundary(entries: Sequence[LogEntry]) -> LogEntry | None:
    return next((e for e in reversed(entries) if e.kind == "boundary"), None)


def boundary_blocks(boundary: LogEntry) -> list[Block]:
    blocks: list[Block] = []
    if boundary.content.strip():
        text = f"{SUMMARY_HEADER}\n{boundary.content}"
        blocks.append(
            Block(
                kind="summary",
                role="user",
                text=text,
                tokens=estimate_tokens(text),
                seq=boundary.seq,
            )
        )
    carried = render_state(boundary.data.get("carried") or {})
    if carried:
        text = f"{STATE_HEADER}\n{carried}"
        blocks.append(
            Block(
                kind="state", role="user", text=text, tokens=estimate_tokens(text), seq=boundary.seq
            )
        )
    return blocks


def render_state(carried: Mapping[str, Any]) -> str:
    """The carried durable state as the model reads it; empty parts are left out."""
    lines: list[str] = []
    if carried.get("tasks"):
        lines.append("Task list:")
        lines += [f"- [{t['status']}] {t['text']}" for t in carried["tasks"]]
    if carried.get("timers"):
        lines.append("Armed timers:")
        lines += [f"- {t['id']} due {t['due_at']}: {t['message']}" for t in carried["timers"]]
    if carried.get("questions"):
        lines.append("Questions waiting for the user's answer:")
        for q in carried["questions"]:
            options = f" (options: {', '.join(q['options'])})" if q.get("options") else ""
            lines.append(f"- {q['id']}: {q['question']}{options}")
    if carried.get("subagents"):
        lines.append("Running subagents:")
        lines += [f"- {json.dumps(s, sort_keys=True)}" for s in carried["subagents"]]
    if carried.get("loaded_skills"):
        lines.append("Loaded skills: " + ", ".join(carried["loaded_skills"]))
    return "\n".join(lines)


def system_block(system_prompt: str) -> Block:
    return Block(
        kind="system", role="system", text=system_prompt, tokens=estimate_tokens(system_prompt)
    )


def tools_block(tools: Sequence[ToolSpec]) -> Block:
    text = json.dumps(
        [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools]
    )
    return Block(kind="system", role="tools", text=text, tokens=estimate_tokens(text))


def entry_block(entry: LogEntry, message: Message) -> Block:
    text = message_text(message)
    counted = (
        entry.tokens is not None and entry.kind == message.kind and entry.kind != "tool_result"
    )
    tokens = entry.tokens if counted and entry.tokens is not None else estimate_tokens(text)
    return Block(kind="entry", role=message.kind, text=text, tokens=tokens, seq=entry.seq)


def message_text(message: Message) -> str:
    if isinstance(message, AssistantMessage) and message.tool_calls:
        calls = "\n".join(f"→ {c.name}({c.arguments})" for c in message.tool_calls)
        return f"{message.text}\n{calls}".strip()
    return message.text


def entry_messages(
    entries: Sequence[LogEntry], cleared_before: int = 0, preview_chars: int = PREVIEW_CHARS
) -> list[tuple[LogEntry, Message]]:
    """The model-visible entries as messages, in log order."""
    out: list[tuple[LogEntry, Message]] = []
    for entry in entries:
        message = entry_message(entry)
        if isinstance(message, ToolResultMessage):
            message = shortened(message, entry.seq, cleared_before, preview_chars)
        if message is not None:
            out.append((entry, message))
    return out


def shortened(
    message: ToolResultMessage, seq: int, cleared_before: int, preview_chars: int
) -> ToolResultMessage:
    if seq < cleared_before:
        text = f'[Output cleared to save context. read_entry {{"seq": {seq}}} returns it whole.]'
        return replace(message, text=text)
    if len(message.text) > preview_chars:
        rest = len(message.text) - preview_chars
        text = (
            f"{message.text[:preview_chars]}\n[… {rest} more characters. The whole output is "
            f'entry {seq}: read_entry {{"seq": {seq}}}.]'
        )
        return replace(message, text=text)
    return message


def entry_message(entry: LogEntry) -> Message | None:
    data = entry.data
    match entry.kind:
        case "user":
            return UserMessage(text=entry.content)
        case "answer":
            asked = data.get("asked")
            return UserMessage(
                text=f"[answer to: {asked}]\n{entry.content}" if asked else entry.content
            )
        case "command":
            expansion = data.get("expansion")
            return UserMessage(text=str(expansion)) if expansion else None
        case "assistant":
            return AssistantMessage(
                text=entry.content,
                tool_calls=tuple(ToolCall(**call) for call in data.get("tool_calls", ())),
                reasoning=data.get("reasoning"),
                provider_details=data.get("provider_details"),
            )
        case "tool_result":
            return ToolResultMessage(
                call_id=str(data.get("call_id", "")),
                name=str(data.get("name", "")),
                text=entry.content,
                is_error=bool(data.get("is_error", False)),
            )
        case "subagent_result":
            return UserMessage(text=f"[subagent {data.get('type', '')} result]\n{entry.content}")
        case "timer":
            return UserMessage(text=f"[timer {data.get('timer', '')} fired] {entry.content}")
        case "boundary" | "notice":
            return None
        case _:
            assert_never(entry.kind)


def paired(items: list[tuple[LogEntry, Message]]) -> list[tuple[LogEntry, Message]]:
    """Every tool call followed by exactly its results; orphans dropped, gaps filled."""
    out: list[tuple[LogEntry, Message]] = []
    open_calls: dict[str, tuple[LogEntry, ToolCall]] = {}
    for entry, message in items:
        if isinstance(message, ToolResultMessage):
            if open_calls.pop(message.call_id, None) is not None:
                out.append((entry, message))
            continue
        out.extend(close_open_calls(open_calls))
        if isinstance(message, AssistantMessage):
            open_calls = {call.id: (entry, call) for call in message.tool_calls}
        out.append((entry, message))
    out.extend(close_open_calls(open_calls))
    return out


def close_open_calls(
    open_calls: dict[str, tuple[LogEntry, ToolCall]],
) -> list[tuple[LogEntry, Message]]:
    closed: list[tuple[LogEntry, Message]] = [
        (
            entry,
            ToolResultMessage(call_id=call.id, name=call.name, text=MISSING_RESULT, is_error=True),
        )
        for entry, call in open_calls.values()
    ]
    open_calls.clear()
    return closed
