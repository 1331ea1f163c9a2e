"""A scripted Anthropic Messages API server, run as its own process by the tests.

Usage: python scripted_anthropic_server.py SCRIPT.json [PORT]; with port 0 the chosen port is
stdout's first line. Each POST to /v1/messages consumes the next step of the script (a list):
a reply {"text", "thinking", "signature", "redacted", "tool_calls": [{"id", "name", "input"}],
"stop_reason", "usage"} or an error {"status", "type", "message", "retry_after"} sent with
Anthropic's error body ({"type": "error", "error": {"type", "message"}}). A reply streams the
official event sequence: `message_start` (usage in it), a `ping`, per content block
`content_block_start`, its deltas (`thinking_delta` then `signature_delta`, `text_delta`,
`input_json_delta`) and `content_block_stop`, then `message_delta` (stop reason, usage) and
`message_stop`. A reply may be broken: "cut" (the connection closes after the first text
delta), "malformed" (a data line that is not JSON there), "stream_error" {"type", "message"}
(an `error` event there, as the API sends `overloaded_error` mid-stream). A step with
"repeat" is never used up. GET /__requests serves every request body received, in order.

Cache accounting, when a reply gives no "usage": the prompt is flattened into blocks (each
tool, each system block, each message's content blocks with its role), each counted as
ceil(bytes of its JSON without `cache_control` / 4) tokens. A block with `cache_control` is a
breakpoint: the longest prefix cached by an earlier request that ends at a breakpoint or up to
20 blocks before one is read from the cache, the rest up to the last breakpoint is written,
and every breakpoint's prefix is stored. The usage reports `input_tokens` (after the last
breakpoint), `cache_read_input_tokens` and `cache_creation_input_tokens` apart, as the API
does. (No minimum cacheable length, no expiry.)

The script may instead be `{"density": D, "steps": [...]}`: every block then counts
ceil(D × bytes / 4), in the usage and in the count endpoint alike (a denser tokenizer than
Horsie's four characters a token, and bytes, not characters: text outside ASCII costs more).

POST /v1/messages/count_tokens answers `{"input_tokens": N}` by the server's own count, not
Horsie's: the blocks as flattened above, counted as the usage counts them. It consumes no
step; GET /__counts serves every count it gave
(`{"input_tokens", "messages"}`, in order). A count request for a model whose id starts with
`nocount` is refused with a 500 `api_error`, as an outage would. Stdlib only.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

from scripted_openai_server import Handler as ChatHandler
from scripted_openai_server import Script, pieces

LOOKBACK = 20


class Cache:
    def __init__(self) -> None:
        self.prefixes: set[str] = set()
        self.density = 1.0

    def size(self, text: str) -> int:
        return math.ceil(self.density * len(text.encode()) / 4)

    def usage(self, body: dict[str, Any]) -> dict[str, int]:
        blocks = flattened(body)
        sizes = [self.size(text) for text, _ in blocks]
        digests, running = [], hashlib.sha256()
        for text, _ in blocks:
            running.update(text.encode())
            digests.append(running.hexdigest())
        marks = [i for i, (_, marked) in enumerate(blocks) if marked]
        hit = -1
        for mark in marks:
            for k in range(mark, max(-1, mark - LOOKBACK - 1), -1):
                if digests[k] in self.prefixes:
                    hit = max(hit, k)
                    break
        read = sum(sizes[: hit + 1])
        last = marks[-1] if marks else -1
        written = max(0, sum(sizes[: last + 1]) - read)
        self.prefixes.update(digests[mark] for mark in marks)
        return {"input_tokens": sum(sizes) - read - written, "cache_read_input_tokens": read,
                "cache_creation_input_tokens": written}  # fmt: skip


def flattened(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """(canonical JSON, carries a breakpoint) per block, in the API's prefix order."""
    out: list[tuple[str, bool]] = []

    def add(prefix: str, block: Any) -> None:
        if isinstance(block, str):
            block = {"type": "text", "text": block}
        bare = {k: v for k, v in block.items() if k != "cache_control"}
        out.append((prefix + json.dumps(bare, sort_keys=True), "cache_control" in block))

    for tool in body.get("tools") or []:
        add("tool:", tool)
    system = body.get("system") or []
    for block in [system] if isinstance(system, str) else system:
        add("system:", block)
    for message in body.get("messages") or []:
        content = message["content"]
        for block in [content] if isinstance(content, str) else content:
            add(message["role"] + ":", block)
    return out


def sse(kind: str, **fields: Any) -> tuple[str, Any]:
    return kind, {"type": kind, **fields}


def reply_events(step: dict[str, Any], number: int, body: dict[str, Any],
                 usage: dict[str, int]) -> Iterator[tuple[str, Any]]:  # fmt: skip
    start_usage = {**usage, "output_tokens": 1}  # the final count comes in message_delta
    message = {"id": f"msg_{number}", "type": "message", "role": "assistant", "content": [],
               "model": body.get("model"), "stop_reason": None, "stop_sequence": None,
               "usage": start_usage}  # fmt: skip
    yield sse("message_start", message=message)
    yield sse("ping")
    index = 0
    if step.get("thinking") is not None:
        yield sse("content_block_start", index=index,
                  content_block={"type": "thinking", "thinking": "", "signature": ""})  # fmt: skip
        for piece in pieces(step["thinking"]):
            yield sse("content_block_delta", index=index,
                      delta={"type": "thinking_delta", "thinking": piece})  # fmt: skip
        yield sse("content_block_delta", index=index,
                  delta={"type": "signature_delta", "signature": step.get("signature", "")})  # fmt: skip
        yield sse("content_block_stop", index=index)
        index += 1
    if step.get("redacted") is not None:
        block = {"type": "redacted_thinking", "data": step["redacted"]}
        yield sse("content_block_start", index=index, content_block=block)
        yield sse("content_block_stop", index=index)
        index += 1
    if step.get("text"):
        yield sse("content_block_start", index=index, content_block={"type": "text", "text": ""})
        for number_, piece in enumerate(pieces(step["text"])):
            yield sse("content_block_delta", index=index,
                      delta={"type": "text_delta", "text": piece})  # fmt: skip
            if number_ == 0 and step.get("malformed"):
                yield "content_block_delta", "{not json"
            if number_ == 0 and step.get("stream_error"):
                yield sse("error", error=step["stream_error"])
                return
            if number_ == 0 and step.get("cut"):
                return
        yield sse("content_block_stop", index=index)
        index += 1
    for call in step.get("tool_calls", []):
        block = {"type": "tool_use", "id": call["id"], "name": call["name"], "input": {}}
        yield sse("content_block_start", index=index, content_block=block)
        for piece in pieces(json.dumps(call["input"])):
            yield sse("content_block_delta", index=index,
                      delta={"type": "input_json_delta", "partial_json": piece})  # fmt: skip
        yield sse("content_block_stop", index=index)
        index += 1
    stop = step.get("stop_reason") or ("tool_use" if step.get("tool_calls") else "end_turn")
    output = sum(len(pieces(str(step.get(k) or ""))) for k in ("text", "thinking")) or 1
    yield sse("message_delta", delta={"stop_reason": stop, "stop_sequence": None},
              usage={"output_tokens": output, **usage})  # fmt: skip
    yield sse("message_stop")


class Handler(ChatHandler):
    cache = Cache()
    counts: list[dict[str, Any]] = []

    def do_GET(self) -> None:
        if self.path == "/__counts":
            self.send_json(200, self.counts)
        else:
            super().do_GET()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"null")
        if self.path == "/v1/messages/count_tokens":
            self.count_tokens(body)
            return
        if self.path != "/v1/messages":
            self.send_anthropic_error(404, {"type": "not_found_error", "message": "not found"})
            return
        step = self.script.take(body)
        number = len(self.script.requests)
        if "status" in step:
            error = {"type": step.get("type", "api_error"), "message": step["message"]}
            self.send_anthropic_error(step["status"], error, step.get("retry_after"))
            return
        with self.script.lock:
            usage = step.get("usage") or self.cache.usage(body)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for kind, payload in reply_events(step, number, body, usage):
            data = payload if isinstance(payload, str) else json.dumps(payload)
            self.wfile.write(f"event: {kind}\ndata: {data}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True

    def count_tokens(self, body: dict[str, Any]) -> None:
        if str(body.get("model", "")).startswith("nocount"):
            self.send_anthropic_error(500, {"type": "api_error", "message": "counting is down"})
            return
        tokens = sum(self.cache.size(text) for text, _ in flattened(body))
        with self.script.lock:
            self.counts.append({"input_tokens": tokens, "messages": len(body["messages"])})
        self.send_json(200, {"input_tokens": tokens})

    def send_anthropic_error(
        self, status: int, error: dict[str, Any], retry_after: Any = None
    ) -> None:
        data = json.dumps({"type": "error", "error": error, "request_id": "req_scripted"})
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if retry_after is not None:
            self.send_header("retry-after", str(retry_after))
        self.send_header("Content-Length", str(len(data.encode())))
        self.end_headers()
        self.wfile.write(data.encode())


def main(argv: list[str]) -> None:
    with open(argv[1], encoding="utf-8") as file:
        script = json.load(file)
    if isinstance(script, dict):
        Handler.cache.density = float(script.get("density", 1.0))
        script = script["steps"]
    Handler.script = Script(script)
    server = ThreadingHTTPServer(("127.0.0.1", int(argv[2]) if len(argv) > 2 else 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv)
