"""The model's own tokenizer, where Horsie has it, as a `TokenCounter`.

OpenAI's models count with their BPE encodings (`o200k_base`, `cl100k_base`). `tiktoken`
downloads those encodings on first use, which a server here must never do, so the same
encodings come from `bpe-openai`, which ships them inside the package and exposes
tiktoken's API. A card that talks to another server (its own `base_url`) may call its model
anything: it is counted by the calibrated estimate, never by a guess at its tokenizer.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from urllib.parse import urlparse

from harness.tokens import ESTIMATE, TokenCounter, Tokenizer

OPENAI_HOSTS = ("api.openai.com",)
OPENAI_MESSAGE_OVERHEAD = 4  # role and separators around each chat message
ENCODINGS = (  # by model-name prefix, newest families first
    (("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "gpt-oss", "o1", "o3", "o4", "chatgpt"),
     "o200k_base"),
    (("gpt-4", "gpt-3.5", "text-embedding-3"), "cl100k_base"),
)  # fmt: skip


def openai_counter(model: str, base_url: str | None) -> TokenCounter:
    if base_url and urlparse(base_url).hostname not in OPENAI_HOSTS:
        return ESTIMATE
    encode = openai_encoder(model)
    if encode is None:
        return ESTIMATE
    return Tokenizer(name=model, encode=encode, overhead=OPENAI_MESSAGE_OVERHEAD)


@functools.lru_cache(maxsize=16)
def openai_encoder(model: str) -> Callable[[str], int] | None:
    import bpe_openai  # type: ignore[import-untyped]

    name = next((enc for prefixes, enc in ENCODINGS if model.startswith(prefixes)), None)
    if name is None:
        return None  # an unknown model name: no tokenizer, the estimate calibrates
    encoding = bpe_openai.get_encoding(name)

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    return count
