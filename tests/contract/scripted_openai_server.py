"""A scripted OpenAI-compatible chat-completions server, run as its own process by the tests.

Usage: python scripted_openai_server.py SCRIPT.json [PORT]. With port 0 (the default) the
chosen port is printed as stdout's first line. The script is a list of steps; each POST to
/v1/chat/completions consumes the next one: a reply {"text", "reasoning", "tool_calls",
"usage"} or an error {"status", "message"}. A step with "repeat" is never used up; a reply
with "stall" streams its text and then hangs, like a model stuck mid-turn; a reply with
"pause" (seconds) waits that long before each piece of its text, like a slow model; "cut"
ends the stream after its text, with no finish reason and no [DONE]; "malformed" follows its
first chunk with a data line that is not JSON; "chunks" (a list of any JSON values) streams
exactly those as its data lines, then [DONE], like a server that sends nonsense; an error
with "raw" sends that text as a non-JSON body, like a service that is not a provider. Every
request body is recorded and served back by GET /__requests, so a test can assert what a wire
really sent; the Authorization header of every POST (to any path) is served by GET
/__authorization, so a test can assert which credential left; the wall-clock time at which
each stream's first text was written is served by GET /__first_text (for benchmarks of the
delay from there to a watcher). A stream is sent chunked on a connection kept open, as
OpenAI's is (a "cut" one closes it instead); GET /__connections counts the connections
that carried a POST, so a test can see whether a client reuses one. Stdlib only.

Counting mode: a script that is an object, not a list, plays a provider with a tokenizer of
its own and a real window: {"density": 3.0, "limit": 8000, "replies": [{"text": …}, …]}.
Each request's prompt is counted from the request body itself, by this file's own rule
(`counted`): per message, (UTF-8 bytes of its content and tool call arguments) × density / 4
plus 7, plus the tools JSON the same way; so a density of 3 counts three times chars/4, and
the per-message cost keeps it from being proportional. That count is the `prompt_tokens` it
reports. A request whose prompt plus `max_tokens` exceeds `limit` is refused with OpenAI's
exact `context_length_exceeded` error; a summary request (its last user message starts with
"[Compaction]") is answered with a short summary that fits its `max_tokens`; any other gets
the next reply, cycling. GET /__counts serves, per request, what was counted and whether it
was refused.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHUNK_CHARS = 4
DEFAULT_USAGE = {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12}
PER_MESSAGE = 7
SUMMARY_LINE = "The user shared CSV rows, prose and code over many turns; each was answered. "
SUMMARY_MARK = "[Compaction]"


class Script:
    def __init__(self, steps: list[dict[str, Any]]) -> None:
        self.steps = list(steps)
        self.requests: list[Any] = []
        self.authorization: list[str | None] = []
        self.first_text: list[float] = []  # wall-clock time each stream's first text left
        self.lock = threading.Lock()

    def take(self, body: Any) -> dict[str, Any]:
        with self.lock:
            self.requests.append(body)
            if not self.steps:
                return {"status": 500, "message": "the script has no steps left"}
            if self.steps[0].get("repeat"):
                return self.steps[0]
            return self.steps.pop(0)


class CountingScript(Script):
    """A provider with its own count and a real limit (see the module's docstring)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        super().__init__([])
        self.density = float(spec.get("density", 1.0))
        self.limit = int(spec["limit"])
        self.replies = list(spec.get("replies") or [spec.get("reply") or {"text": "Noted."}])
        self.counts: list[dict[str, Any]] = []
        self.answered = 0

    def tokens(self, text: str) -> int:
        return math.ceil(len(text.encode("utf-8")) * self.density / 4)

    def counted(self, body: dict[str, Any]) -> int:
        total = 0
        for message in body.get("messages") or []:
            text = content_text(message.get("content"))
            for call in message.get("tool_calls") or []:
                text += str((call.get("function") or {}).get("arguments") or "")
            total += self.tokens(text) + PER_MESSAGE
        if body.get("tools"):
            total += self.tokens(json.dumps(body["tools"]))
        return total

    def take(self, body: Any) -> dict[str, Any]:
        prompt = self.counted(body)
        cap = int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
        summary = is_summary_request(body)
        refused = prompt + cap > self.limit
        with self.lock:
            self.requests.append(body)
            self.counts.append(
                {
                    "prompt_tokens": prompt,
                    "max_tokens": cap,
                    "summary": summary,
                    "refused": refused,
                }  # fmt: skip
            )
            if refused:
                return overflow_step(self.limit, prompt, cap)
            if summary:
                text = self.summary(cap, len(self.counts))
            else:
                text = str(self.replies[self.answered % len(self.replies)].get("text", ""))
                self.answered += 1
        out = self.tokens(text)
        usage = {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out}
        return {"text": text, "usage": usage}

    def summary(self, cap: int, call: int) -> str:
        """A summary of about half its cap (at most 300 tokens), in this server's count."""
        target = min(max(cap // 2, 16), 300)
        chars = int(target * 4 / self.density)
        text = f"Summary (call {call}): " + SUMMARY_LINE * (chars // len(SUMMARY_LINE) + 1)
        return text[:chars].rstrip() or "Summary."


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def is_summary_request(body: dict[str, Any]) -> bool:
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    return bool(users) and content_text(users[-1].get("content")).startswith(SUMMARY_MARK)


def overflow_step(limit: int, prompt: int, cap: int) -> dict[str, Any]:
    """OpenAI's own refusal of a prompt too long for the model, word for word."""
    message = (
        f"This model's maximum context length is {limit} tokens. However, you requested "
        f"{prompt + cap} tokens ({prompt} in the messages, {cap} in the completion). "
        "Please reduce the length of the messages or completion."
    )
    error = {"message": message, "type": "invalid_request_error", "param": "messages",
             "code": "context_length_exceeded"}  # fmt: skip
    return {"status": 400, "error": error}


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
    if step.get("cut"):
        return
    calls = step.get("tool_calls", [])
    yield from tool_call_chunks(calls)
    yield chunk({}, finish="tool_calls" if calls else "stop")
    usage = step.get("usage", DEFAULT_USAGE)
    if include_usage and usage is not None:
        yield envelope("chat.completion.chunk", choices=[], usage=usage)


def has_text(item: Any) -> bool:
    choices = item.get("choices") if isinstance(item, dict) else None
    return isinstance(choices, list) and any(
        isinstance(c, dict) and isinstance(c.get("delta"), dict) and c["delta"].get("content")
        for c in choices
    )


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
    disable_nagle_algorithm = True  # as a real server does: no write waits for an ACK
    cut = False
    malformed = False
    posted_on: set[int] = set()  # the connections (handler objects) that carried a POST

    def do_GET(self) -> None:
        if self.path == "/__connections":
            self.send_json(200, len(Handler.posted_on))
        elif self.path == "/__requests":
            self.send_json(200, self.script.requests)
        elif self.path == "/__counts":
            self.send_json(200, getattr(self.script, "counts", []))
        elif self.path == "/__authorization":
            self.send_json(200, self.script.authorization)
        elif self.path == "/__first_text":
            self.send_json(200, self.script.first_text)
        elif self.path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
        else:
            self.send_json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        with self.script.lock:
            self.script.authorization.append(self.headers.get("Authorization"))
            Handler.posted_on.add(id(self))
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"null")
        if self.path != "/v1/chat/completions":
            self.send_json(404, {"error": {"message": "not found"}})
            return
        step = self.script.take(body)
        if "status" in step:
            self.send_error_step(step)
        elif body.get("stream"):
            self.cut, self.malformed = bool(step.get("cut")), bool(step.get("malformed"))
            include = bool((body.get("stream_options") or {}).get("include_usage"))
            self.send_stream(
                iter(step["chunks"]) if "chunks" in step else reply_chunks(step, include)
            )
        else:
            self.send_json(200, whole_reply(step))

    def send_error_step(self, step: dict[str, Any]) -> None:
        if "raw" in step:
            self.send_raw(step["status"], step["raw"].encode())
            return
        if "error" in step:
            self.send_json(step["status"], {"error": step["error"]})
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
        if self.cut:
            self.send_header("Connection", "close")
        else:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        texted = False
        for item in chunks:
            self.send_event(json.dumps(item))
            if not texted and has_text(item):
                texted = True
                with self.script.lock:
                    self.script.first_text.append(time.time())
            if self.malformed:
                self.send_event("{not json")
        if self.cut:
            self.close_connection = True
            return
        self.send_event("[DONE]")
        self.wfile.write(b"0\r\n\r\n")  # the chunked body's end: the connection stays open
        self.wfile.flush()

    def send_event(self, data: str) -> None:
        event = f"data: {data}\n\n".encode()
        self.wfile.write(event if self.cut else b"%x\r\n%s\r\n" % (len(event), event))
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def main(argv: list[str]) -> None:
    with open(argv[1], encoding="utf-8") as file:
        spec = json.load(file)
    Handler.script = CountingScript(spec) if isinstance(spec, dict) else Script(spec)
    port = int(argv[2]) if len(argv) > 2 else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv)
