"""Token estimates for text no provider has counted.

A provider's reported usage always wins; this estimate (about four characters a token) fills
in where none was reported, such as a new user message or a local model's stream.
"""

from __future__ import annotations

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    if not text:
        return 0
    return max(1, -(-len(text) // CHARS_PER_TOKEN))
