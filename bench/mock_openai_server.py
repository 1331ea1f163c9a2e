"""An instant OpenAI-compatible chat-completions server for the side-by-side benchmark.

Usage: python mock_openai_server.py [PORT]; with port 0 (the default) the chosen port is
printed as stdout's first line. Stdlib only, so any interpreter runs it.

Every POST to /v1/chat/completions is answered at once, streamed or whole as asked: a call of
the tool named by the request's first tool when the last message is a user message containing
TOOL_MARK, else a short text. The prompt it reports is the request body's characters / 4.
The server times each request from its request line read to its last byte written;
GET /__times returns those times (seconds) since the last GET, forgetting them, so a harness's
own time is a turn's wall time minus their sum, and the size of the last request body.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOOL_MARK = "[use the tool]"
REPLY = "Noted: the figures add up and nothing is out of the ordinary today."
TIMES: list[float] = []
LAST_BYTES = [0]
LOCK = threading.Lock()


def last_message(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or [{}]
    return messages[-1] if isinstance(messages[-1], dict) else {}


def text_of(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def tool_call(body: dict[str, Any]) -> dict[str, Any] | None:
    last = last_message(body)
    tools = body.get("tools") or []
    if last.get("role") != "user" or TOOL_MARK not in text_of(last.get("content")) or not tools:
        return None
    names = [t.get("function", {}).get("name") for t in tools]
    name = "read_entry" if "read_entry" in names else names[0]
    return {"id": f"call_{time.monotonic_ns()}", "type": "function",
            "function": {"name": name, "arguments": json.dumps({"seq": 1})}}  # fmt: skip


def usage(raw: bytes) -> dict[str, int]:
    prompt = len(raw) // 4
    return {"prompt_tokens": prompt, "completion_tokens": 16, "total_tokens": prompt + 16}


def whole(call: dict[str, Any] | None, raw: bytes) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None if call else REPLY}
    if call:
        message["tool_calls"] = [call]
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if call else "stop"}
    return envelope("chat.completion", choices=[choice], usage=usage(raw))


def chunks(call: dict[str, Any] | None, raw: bytes, include_usage: bool) -> list[dict[str, Any]]:
    delta: dict[str, Any] = {"role": "assistant", "content": "" if call else REPLY}
    if call:
        delta["tool_calls"] = [{"index": 0, **call}]
    finish = "tool_calls" if call else "stop"
    out = [
        envelope("chat.completion.chunk", choices=[{"index": 0, "delta": delta}]),
        envelope("chat.completion.chunk", choices=[{"index": 0, "delta": {}, "finish_reason": finish}]),
    ]  # fmt: skip
    if include_usage:
        out.append(envelope("chat.completion.chunk", choices=[], usage=usage(raw)))
    return out


def envelope(obj: str, **fields: Any) -> dict[str, Any]:
    return {"id": "mock", "object": obj, "created": 0, "model": "mock", **fields}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as a real server does: no write waits for an ACK

    def parse_request(self) -> bool:
        self.began = time.perf_counter()
        return super().parse_request()

    def do_GET(self) -> None:
        with LOCK:
            answer = {"times": list(TIMES), "last_bytes": LAST_BYTES[0]}
            TIMES.clear()
        self.send_bytes(200, json.dumps(answer).encode(), "application/json")

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.loads(raw or b"{}")
        call = tool_call(body)
        if body.get("stream"):
            include = bool((body.get("stream_options") or {}).get("include_usage"))
            events = [f"data: {json.dumps(c)}\n\n" for c in chunks(call, raw, include)]
            data = ("".join(events) + "data: [DONE]\n\n").encode()
            self.send_bytes(200, data, "text/event-stream")
        else:
            self.send_bytes(200, json.dumps(whole(call, raw)).encode(), "application/json")
        with LOCK:
            TIMES.append(time.perf_counter() - self.began)
            LAST_BYTES[0] = len(raw)

    def send_bytes(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def main(argv: list[str]) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", int(argv[1]) if len(argv) > 1 else 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv)
