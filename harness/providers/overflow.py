"""Reading a provider's "context too long" error: is it one, and what does it say?

Servers phrase it differently and most say the limit (some also say how large the prompt
was): OpenAI and vLLM ("maximum context length is 8192 tokens … resulted in 9000 tokens"),
llama.cpp's server ("request (4476 tokens) exceeds the available context size (4096
tokens)", with `n_ctx` and `n_prompt_tokens` in the body), llama-cpp-python ("Requested
tokens (3799) exceed context window of 2048"), Anthropic ("prompt is too long: 208310 tokens
> 200000 maximum"). The limit becomes the session's effective window; the prompt's size,
where given, calibrates the counter. When the server names no limit, the caller assumes the
prompt that failed was too large by a safe margin.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

N = r"(\d[\d,]*)"
OVERFLOW_WORDS = (
    "context length",
    "maximum context",
    "context_length_exceeded",
    "context window",
    "context size",
    "exceed_context_size",
    "prompt is too long",
    "context limit",
    "input is too long",
    "too many tokens",
)
LIMITS = (
    rf"maximum context length is {N}",
    rf"configured limit of {N}",
    rf"available context size \({N} tokens\)",
    rf"n_ctx['\"]?\s*[:=]\s*{N}",
    rf"exceed context window of {N}",
    rf"tokens > {N} maximum",
    rf"context limit: {N} \+ {N} > {N}",
    rf"context (?:window|length|size) (?:of|is) {N}",
)
PROMPTS = (
    rf"{N} in the messages",
    rf"resulted in {N} tokens",
    rf"request has {N} input tokens",
    rf"request \({N} tokens\)",
    rf"n_prompt_tokens['\"]?\s*[:=]\s*{N}",
    rf"requested tokens \({N}\)",
    rf"prompt is too long: {N} tokens",
    rf"exceed context limit: {N} \+",
)


@dataclass(frozen=True, kw_only=True)
class Overflow:
    limit: int | None  # the most the server accepts, prompt and output together
    prompt: int | None  # what it counted in the prompt that failed


def is_overflow(message: str) -> bool:
    lowered = message.lower()
    return any(word in lowered for word in OVERFLOW_WORDS)


def read_overflow(message: str) -> Overflow:
    return Overflow(limit=first(LIMITS, message), prompt=first(PROMPTS, message))


def first(patterns: tuple[str, ...], message: str) -> int | None:
    for pattern in patterns:
        match = re.search(pattern, message, re.IGNORECASE)
        if match:
            value = int(match.groups()[-1].replace(",", ""))
            return value if value > 0 else None
    return None
