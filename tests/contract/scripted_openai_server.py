"""A scripted OpenAI-compatible chat-completions server, run as its own process by the tests.

Usage: python scripted_openai_server.py SCRIPT.json [PORT]. With port 0 (the default) the
chosen port is printed as stdout's first line. The script is a list of steps; each POST to
/v1/chat/completions consumes the next one: a reply {"text", "reasoning", "tool_calls",
"usage"} or an error {"status", "message"}. A step with "repeat" is never used up; a reply
with "stall" streams its text and then hangs, like a model stuck mid-turn; a reply with
"pause" (seconds) waits that long before each piece of its text, like a slow model; an error
with "raw" sends that text as a non-JSON body, like a service that is not a provider. Every
request body is recorded and served back by GET /__requests, so a test can assert what a wire
really sent; the Authorization header of every POST (to any path) is served by GET
/__authorization, so a test can assert which credential left. Stdlib only.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHUNK_CHARS = 4
DEFAULT_USAGE = {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12}


class Script:
    def __init__(self, steps: list[dict[str, Any]]) -> None:
        self.steps = list(steps)
        self.requests: list[Any] = []
        self.authorization: list[str | None] = []
        self.lock = threading.Lock()

    def take(self, body: Any) -> dict[str, Any]:
        with self.lock:
            self.requests.append(body)
            if not self.steps:
                return {"status": 500, "message": "the script has no steps left"}
            if self.steps[0].get("repeat"):
                return self.steps[0]
            return self.steps.pop(0)


def pieces(text: str) -> list[str]:
    return [text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)]


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return envelope("chat.completion.chunk", choices=[choice])


def envelope(obj: str, **fields: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-scripted", "object": obj, "created": int(time.time()),
            "model": "scripted", **fields}  # fmt: skip


def tool_call_chunks(calls: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """As OpenAI does: id and name first, then the arguments in fragments, by index."""
    for index, call in enumerate(calls):
        head = {"index": index, "id": call["id"], "type": "function",
                "function": {"name": call["name"], "arguments": ""}}  # fmt: skip
        yield chunk({"tool_calls": [head]})
        for part in pieces(call["arguments"]):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})


def reply_chunks(step: dict[str, Any], include_usage: bool) -> Iterator[dict[str, Any]]:
    yield chunk({"role": "assistant", "content": ""})
    for part in pieces(step.get("reasoning", "")):
        yield chunk({"reasoning_content": part})
    pause = float(step.get("pause", 0))
    for part in pieces(step.get("text", "")):
        if pause:
            time.sleep(pause)
        yield chunk({"content": part})
    if step.get("stall"):
        threading.Event().wait()
    calls = step.get("tool_calls", [])
    yield from tool_call_chunks(calls)
    yield chunk({}, finish="tool_calls" if calls else "stop")
    usage = step.get("usage", DEFAULT_USAGE)
    if include_usage and usage is not None:
        yield envelope("chat.completion.chunk", choices=[], usage=usage)


def whole_reply(step: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.get("text", "")}
    calls = step.get("tool_calls", [])
    if calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }  # fmt: skip
            for c in calls
        ]
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
    return envelope("chat.completion", choices=[choice], usage=step.get("usage", DEFAULT_USAGE))


class Handler(BaseHTTPRequestHandler):
    script: Script
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self.path == "/__requests":
            self.send_json(200, self.script.requests)
        elif self.path == "/__authorization":
            self.send_json(200, self.script.authorization)
        elif self.path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
        else:
            self.send_json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        with self.script.lock:
            self.script.authorization.append(self.headers.get("Authorization"))
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"null")
        if self.path != "/v1/chat/completions":
            self.send_json(404, {"error": {"message": "not found"}})
            return
        step = self.script.take(body)
        if "status" in step:
            self.send_error_step(step)
        elif body.get("stream"):
            include = bool((body.get("stream_options") or {}).get("include_usage"))
            self.send_stream(reply_chunks(step, include))
        else:
            self.send_json(200, whole_reply(step))

    def send_error_step(self, step: dict[str, Any]) -> None:
        if "raw" in step:
            self.send_raw(step["status"], step["raw"].encode())
            return
        error = {"message": step["message"], "type": "scripted_error", "code": step.get("code")}
        self.send_json(step["status"], {"error": error})

    def send_json(self, status: int, payload: Any) -> None:
        self.send_raw(status, json.dumps(payload).encode(), "application/json")

    def send_raw(self, status: int, data: bytes, content_type: str = "text/html") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_stream(self, chunks: Iterator[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for item in chunks:
            self.send_event(json.dumps(item))
        self.send_event("[DONE]")
        self.close_connection = True

    def send_event(self, data: str) -> None:
        self.wfile.write(f"data: {data}\n\n".encode())
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def main(argv: list[str]) -> None:
    with open(argv[1], encoding="utf-8") as file:
        Handler.script = Script(json.load(file))
    port = int(argv[2]) if len(argv) > 2 else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv)
