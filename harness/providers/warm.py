"""Process start: pay the SDKs' one-time costs before a turn would.

The `openai` SDK imports its resources lazily on first use (`client.chat` alone imports
~1.5 s of modules) and builds its request and response types on the first call; a TLS
context loads the trusted certificates. Left to the first turn of a process (or of a new
card), that is most of a second before its first delta. `warm_all()` does it once at start:
one streamed call through each SDK's real code path, answered in memory by a canned reply
(no network: httpcore's `AsyncMockBackend` serves it to the wires' `http11` transport), and
the shared TLS context of `guard`. A wire whose SDK is not installed is skipped. What the warming
loaded is then frozen out of the garbage collector's full walks (`warm_then_freeze`, which a
serving process runs on a thread of its own once it serves: `horsie_site.readiness`).
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

import httpcore
import httpx

from harness.providers.guard import tls_context
from harness.providers.http11 import Http11Transport

log = logging.getLogger(__name__)
WARM_HOST = "warm.invalid"  # never resolved: the mock backend answers in memory

CHUNK = {
    "id": "warm",
    "object": "chat.completion.chunk",
    "created": 0,
    "model": "warm",
    "choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}}],
}


def canned_client() -> httpx.AsyncClient:
    """A client whose transport is the wires' own (`http11`), as on a turn, reading a canned
    stream from memory (httpcore's `AsyncMockBackend`): what it builds on first use is paid
    here, not by the first turn."""
    done = {**CHUNK, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    events = "".join(f"data: {json.dumps(item)}\n\n" for item in (CHUNK, done))
    body = (events + "data: [DONE]\n\n").encode()
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n"
    transport = Http11Transport(httpcore.AsyncMockBackend([head % len(body), body]), None)
    return httpx.AsyncClient(transport=transport)


def unlogged(record: logging.LogRecord) -> bool:
    """httpx logs every request; the canned one is not worth an operator's attention."""
    return WARM_HOST not in record.getMessage()


async def warm_openai() -> None:
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletion

    from harness.providers.openai_chat import Chunks

    logging.getLogger("httpx").addFilter(unlogged)
    http = canned_client()
    client = AsyncOpenAI(api_key="warm", base_url=f"http://{WARM_HOST}/v1", http_client=http)
    tool = {"type": "function", "function": {"name": "warm", "parameters": {"type": "object"}}}
    body = {
        "model": "warm",
        "messages": [{"role": "system", "content": "warm"}, {"role": "user", "content": "warm"}],
        "tools": [tool],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    stream = await client.post(  # the wires' own path: encoded bytes, a typed chunk stream
        "/chat/completions",
        content=json.dumps(body).encode(),
        options={"security": {"bearer_auth": True}},
        cast_to=ChatCompletion,
        stream=True,
        stream_cls=Chunks,
    )
    async for _ in stream:
        pass
    client.responses  # noqa: B018  (the lazy import is the point)
    await http.aclose()


async def warm_anthropic() -> None:
    from anthropic import AsyncAnthropic

    AsyncAnthropic(api_key="warm").messages  # noqa: B018


WARMERS: tuple[Callable[[], Coroutine[Any, Any, None]], ...] = (warm_openai, warm_anthropic)


async def warm_all() -> None:
    started = time.perf_counter()
    tls_context()
    for warmer in WARMERS:
        try:
            await warmer()
        except ImportError:
            pass
        except Exception:  # a warm-up that fails costs the first turn its time, nothing more
            log.exception("warming %s failed", warmer.__name__)
    log.info("provider SDKs warmed in %.2f s", time.perf_counter() - started)


def warm_then_freeze() -> None:
    """Warm, then freeze what the SDKs loaded out of the collector's full walks, as the
    process did with what it loaded before serving. Nothing is collected first: that
    would be the very walk, under the interpreter lock, while a turn may be running."""
    asyncio.run(warm_all())
    gc.freeze()
