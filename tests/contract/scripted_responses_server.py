"""A scripted OpenAI Responses API server, run as its own process by the tests.

Usage: python scripted_responses_server.py SCRIPT.json [PORT]; with port 0 the chosen port is
stdout's first line. Each POST to /v1/responses consumes the next step of the script (a list):
a reply {"text", "reasoning", "encrypted", "tool_calls": [{"id", "name", "arguments"}],
"usage": {"input_tokens", "output_tokens", "cached_tokens"}} or an error {"status",
"message", "type", "code", "retry_after"}. A reply streams the official event sequence
(`response.created`, `response.in_progress`, per output item `response.output_item.added`,
its part and delta events and `response.output_item.done`, then `response.completed`), with
a reasoning item first when the step has "reasoning" or "encrypted" (ids `rs_<n>`, `msg_<n>`,
`fc_<n>` numbered by request). A reply may also be broken: "cut" (the connection closes
before `response.completed`), "malformed" (a data line that is not JSON after the first
text delta), "fail" (a `response.failed` event with that message), "incomplete" (ends with
`response.incomplete`, reason `max_output_tokens`). A step with "repeat" is never used up.
GET /__requests serves every request body received, in order.

Cache accounting, when a reply gives no "usage" (OpenAI's automatic prompt caching, as its
guide describes it): the prompt is flattened into blocks in prefix order (each tool, the
instructions, each input item), each counted as ceil(bytes of its canonical JSON / 4) tokens.
Every prefix of every prompt is remembered; a prompt reads from the cache the longest prefix,
at block boundaries, that an earlier prompt had, rounded down to 1,024 tokens plus a multiple
of 128, and nothing when the prompt or that prefix is under 1,024 tokens. The usage reports
`input_tokens` (all of it) and `input_tokens_details.cached_tokens`. (No expiry, no routing.)
Stdlib only.
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

CACHE_MIN = 1024
CACHE_STEP = 128


class PrefixCache:
    def __init__(self) -> None:
        self.prefixes: set[str] = set()

    def usage(self, body: dict[str, Any], output_tokens: int) -> dict[str, int]:
        blocks = [json.dumps(block, sort_keys=True) for block in prompt_blocks(body)]
        sizes = [math.ceil(len(text.encode()) / 4) for text in blocks]
        running, digests = hashlib.sha256(), []
        for text in blocks:
            running.update(text.encode())
            digests.append(running.hexdigest())
        hit = max((k + 1 for k, digest in enumerate(digests) if digest in self.prefixes), default=0)
        self.prefixes.update(digests)
        total, matched = sum(sizes), sum(sizes[:hit])
        cached = 0
        if total >= CACHE_MIN and matched >= CACHE_MIN:
            cached = CACHE_MIN + (matched - CACHE_MIN) // CACHE_STEP * CACHE_STEP
        return {"input_tokens": total, "cached_tokens": cached, "output_tokens": output_tokens}


def prompt_blocks(body: dict[str, Any]) -> list[Any]:
    blocks: list[Any] = [{"tool": tool} for tool in body.get("tools") or []]
    if body.get("instructions"):
        blocks.append({"instructions": body["instructions"]})
    items = body.get("input") or []
    blocks += [{"input": items}] if isinstance(items, str) else list(items)
    return blocks


class Events:
    def __init__(
        self, step: dict[str, Any], number: int, body: dict[str, Any], cache: PrefixCache
    ) -> None:
        self.step = step
        self.cache = cache
        self.n = number
        self.body = body
        self.sequence = 0
        self.output: list[dict[str, Any]] = []

    def event(self, kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
        payload = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return kind, payload

    def response(self, status: str, **fields: Any) -> dict[str, Any]:
        return {"id": f"resp_{self.n}", "object": "response", "created_at": 1700000000,
                "model": self.body.get("model"), "status": status, "output": list(self.output),
                "error": None, "incomplete_details": None, "store": False,
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                **fields}  # fmt: skip

    def all(self) -> Iterator[tuple[str, Any]]:
        yield self.event("response.created", response=self.response("in_progress"))
        yield self.event("response.in_progress", response=self.response("in_progress"))
        if self.step.get("reasoning") is not None or self.step.get("encrypted") is not None:
            yield from self.reasoning()
        if self.step.get("text"):
            yield from self.message()
        for call in self.step.get("tool_calls", []):
            yield from self.call(call)
        if self.step.get("fail"):
            error = {"code": "server_error", "message": self.step["fail"]}
            yield self.event("response.failed", response=self.response("failed", error=error))
            return
        usage = self.step.get("usage") or self.cache.usage(self.body, output_tokens(self.step))
        wire_usage = {
            "input_tokens": usage["input_tokens"],
            "input_tokens_details": {"cached_tokens": usage.get("cached_tokens", 0)},
            "output_tokens": usage["output_tokens"],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage["input_tokens"] + usage["output_tokens"],
        }
        if self.step.get("cut"):
            return
        if self.step.get("incomplete"):
            details = {"reason": "max_output_tokens"}
            done = self.response("incomplete", usage=wire_usage, incomplete_details=details)
            yield self.event("response.incomplete", response=done)
            return
        yield self.event(
            "response.completed", response=self.response("completed", usage=wire_usage)
        )

    def reasoning(self) -> Iterator[tuple[str, Any]]:
        index, item_id = len(self.output), f"rs_{self.n}"
        yield self.event("response.output_item.added", output_index=index,
                         item={"id": item_id, "type": "reasoning", "summary": []})  # fmt: skip
        summary = []
        text = self.step.get("reasoning")
        if text:
            part = {"type": "summary_text", "text": ""}
            where = {"item_id": item_id, "output_index": index, "summary_index": 0}
            yield self.event("response.reasoning_summary_part.added", **where, part=part)
            for piece in pieces(text):
                yield self.event("response.reasoning_summary_text.delta", **where, delta=piece)
            yield self.event("response.reasoning_summary_text.done", **where, text=text)
            summary = [{"type": "summary_text", "text": text}]
            yield self.event("response.reasoning_summary_part.done", **where, part=summary[0])
        item = {"id": item_id, "type": "reasoning", "summary": summary,
                "encrypted_content": self.step.get("encrypted"), "status": "completed"}  # fmt: skip
        self.output.append(item)
        yield self.event("response.output_item.done", output_index=index, item=item)

    def message(self) -> Iterator[tuple[str, Any]]:
        index, item_id, text = len(self.output), f"msg_{self.n}", self.step["text"]
        item = {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant",
                "content": []}  # fmt: skip
        yield self.event("response.output_item.added", output_index=index, item=item)
        where = {"item_id": item_id, "output_index": index, "content_index": 0}
        part = {"type": "output_text", "text": "", "annotations": []}
        yield self.event("response.content_part.added", **where, part=part)
        for number, piece in enumerate(pieces(text)):
            yield self.event("response.output_text.delta", **where, delta=piece, logprobs=[])
            if number == 0 and self.step.get("malformed"):
                yield "response.output_text.delta", "{not json"
            if number == 0 and self.step.get("cut"):
                return
        yield self.event("response.output_text.done", **where, text=text, logprobs=[])
        part = {"type": "output_text", "text": text, "annotations": []}
        yield self.event("response.content_part.done", **where, part=part)
        done = {**item, "status": "completed", "content": [part]}
        self.output.append(done)
        yield self.event("response.output_item.done", output_index=index, item=done)

    def call(self, call: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        index, item_id = len(self.output), f"fc_{self.n}_{len(self.output)}"
        item = {"id": item_id, "type": "function_call", "status": "in_progress",
                "call_id": call["id"], "name": call["name"], "arguments": ""}  # fmt: skip
        yield self.event("response.output_item.added", output_index=index, item=item)
        for piece in pieces(call["arguments"]):
            yield self.event("response.function_call_arguments.delta", item_id=item_id,
                             output_index=index, delta=piece)  # fmt: skip
        yield self.event("response.function_call_arguments.done", item_id=item_id,
                         output_index=index, arguments=call["arguments"])  # fmt: skip
        done = {**item, "status": "completed", "arguments": call["arguments"]}
        self.output.append(done)
        yield self.event("response.output_item.done", output_index=index, item=done)


def output_tokens(step: dict[str, Any]) -> int:
    return sum(len(pieces(str(step.get(k) or ""))) for k in ("text", "reasoning")) or 1


class Handler(ChatHandler):
    cache = PrefixCache()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"null")
        if self.path != "/v1/responses":
            self.send_json(404, {"error": {"message": "not found"}})
            return
        step = self.script.take(body)
        number = len(self.script.requests)
        if "status" in step:
            self.send_error_step(step)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        with self.script.lock:
            events = list(Events(step, number, body, self.cache).all())
        for kind, payload in events:
            data = payload if isinstance(payload, str) else json.dumps(payload)
            self.wfile.write(f"event: {kind}\ndata: {data}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True

    def send_error_step(self, step: dict[str, Any]) -> None:
        error = {"message": step["message"], "type": step.get("type", "invalid_request_error"),
                 "param": None, "code": step.get("code")}  # fmt: skip
        data = json.dumps({"error": error}).encode()
        self.send_response(step["status"])
        self.send_header("Content-Type", "application/json")
        if "retry_after" in step:
            self.send_header("retry-after", str(step["retry_after"]))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main(argv: list[str]) -> None:
    with open(argv[1], encoding="utf-8") as file:
        Handler.script = Script(json.load(file))
    server = ThreadingHTTPServer(("127.0.0.1", int(argv[2]) if len(argv) > 2 else 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv)
