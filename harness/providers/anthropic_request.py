"""The `anthropic` wire's request: our messages as Messages-API turns of blocks.

The system message is the `system` parameter; tool calls and results are `tool_use` and
`tool_result` blocks, results in the user turn that follows the call, and consecutive
messages of one role are merged into one, as the API requires. Thinking blocks kept in
`provider_details` are replayed verbatim on the assistant turns of the current tool loop, and
only to the model that wrote them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, assert_never

from harness.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)

DETAILS = "anthropic"  # this wire's key in `provider_details`
CACHE = {"type": "ephemeral"}
Block = dict[str, Any]


def request_messages(
    messages: tuple[Message, ...], model: str
) -> tuple[list[Block], list[dict[str, Any]]]:
    """The system blocks and the turns, consecutive turns of one role merged."""
    system: list[Block] = []
    turns: list[dict[str, Any]] = []
    for message, replay in replayed(messages):
        if isinstance(message, SystemMessage):
            if message.text:
                system.append({"type": "text", "text": message.text})
            continue
        role = "assistant" if isinstance(message, AssistantMessage) else "user"
        blocks = message_blocks(message, model, replay)
        if not blocks:
            continue  # the API refuses an empty turn or an empty text block
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return system, turns


def replayed(messages: tuple[Message, ...]) -> Iterator[tuple[Message, bool]]:
    """Each message, and whether thinking is replayed on it: the current tool loop's."""
    users = [i for i, message in enumerate(messages) if isinstance(message, UserMessage)]
    loop_start = users[-1] + 1 if users else 0
    for index, message in enumerate(messages):
        yield message, index >= loop_start


def message_blocks(message: Message, model: str, replay: bool) -> list[Block]:
    match message:
        case SystemMessage():
            return []
        case UserMessage(text=text):
            return [{"type": "text", "text": text}] if text else []
        case ToolResultMessage():
            return [_result(message)]
        case AssistantMessage():
            return assistant_blocks(message, model, replay=replay)
        case _:
            assert_never(message)


def _result(message: ToolResultMessage) -> Block:
    block: Block = {"type": "tool_result", "tool_use_id": message.call_id}
    if message.text:
        block["content"] = message.text
    if message.is_error:
        block["is_error"] = True
    return block


def assistant_blocks(message: AssistantMessage, model: str, *, replay: bool) -> list[Block]:
    """The reply's blocks in their order: thinking as it came (when replayed), the text and
    the calls from the message."""
    layout = _layout(message.provider_details, model)
    calls = {call.id: call for call in message.tool_calls}
    blocks: list[Block] = []
    text_sent = not message.text
    for kept in layout:
        match kept.get("type"):
            case "thinking" | "redacted_thinking" if replay:
                blocks.append(dict(kept))
            case "text" if not text_sent:
                blocks.append({"type": "text", "text": message.text})
                text_sent = True
            case "tool_use" if kept.get("id") in calls:
                blocks.append(_tool_use(calls.pop(kept["id"])))
    if not text_sent:
        blocks.append({"type": "text", "text": message.text})
    blocks.extend(_tool_use(call) for call in calls.values())
    return blocks


def _layout(details: Mapping[str, Any] | None, model: str) -> list[Mapping[str, Any]]:
    """Signatures are checked by the model that wrote them: another model gets none."""
    mine = (details or {}).get(DETAILS)
    if not isinstance(mine, Mapping) or mine.get("model") != model:
        return []
    content = mine.get("content")
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, Mapping)]


def _tool_use(call: ToolCall) -> Block:
    """The API takes the input as an object; arguments that were not one go back as text
    under `arguments`, so nothing the model wrote is lost."""
    try:
        parsed = json.loads(call.arguments or "{}")
    except ValueError:
        parsed = None
    arguments = parsed if isinstance(parsed, dict) else {"arguments": call.arguments}
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments}


def tool_param(spec: ToolSpec) -> Block:
    return {
        "name": spec.name,
        "description": spec.description,
        "input_schema": dict(spec.parameters),
    }
