"""Twisted parses each request's `Content-Type` once per distinct value, not once per request.

Under daphne every request with a body passes through twisted's `Request.requestReceived`,
which parses its `Content-Type` header with the standard library's email machinery (a
`EmailMessage` and its header registry: about 0.25 ms, some 2% of an API turn) only to
learn whether the body is a form, which daphne never reads anyway. The answer depends on the
header's value alone, so it is kept for the values seen last (a bounded cache: a client that
sends a new boundary with every multipart body costs what it did before, nothing more).
"""

from __future__ import annotations

import functools

from twisted.web import http

KEPT = 64


def install() -> None:
    """Idempotent: the parser is wrapped once per process."""
    parse = http._parseContentType
    if not hasattr(parse, "cache_info"):
        http._parseContentType = functools.lru_cache(maxsize=KEPT)(parse)
