"""Text and numbers from outside, checked in one place before anything uses them.

Every integer parsed from text goes through `bounded_int`: ASCII digits only (`str.isdigit`
also accepts "²" and other digits that `int()` refuses), no longer than its bound (so `int()`
never sees 5,000 digits) and within a range both databases hold. Every text from outside
goes through `text_problem`: a NUL byte (PostgreSQL refuses it in text) or a lone surrogate
(no encoding can store it) is refused with a message that says which, before anything is
stored. The API checks whole JSON bodies (`json_problem`), pages their query strings and
forms (`TextCheckMiddleware`), and services check the texts they are handed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from typing import Any

from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

INT_MAX = 2**31 - 1  # PostgreSQL's `integer`, the narrowest integer column either database has
ID_MAX = 2**63 - 1  # a primary key: `bigint`
SEQ_MAX = 2**53 - 1  # an entry's seq: within `bigint`, and exact in every JSON client
TOKENS_MAX = 10_000_000  # a context window, a compaction point: far above any model's window


def bounded_int(text: str | None, *, high: int, low: int = 0) -> int | None:
    """The integer `text` spells in ASCII digits, when it lies in [low, high]; else None."""
    if text is None:
        return None
    text = text.strip()
    if not text or len(text) > len(str(high)) or not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if low <= value <= high else None


def finite_or_none(value: float | None) -> float | None:
    """A stored float as JSON can carry it: infinity and NaN (stored before they were
    refused) are no number, and would make the whole answer invalid JSON."""
    return value if value is not None and math.isfinite(value) else None


def text_problem(text: str) -> str | None:
    """What makes `text` unstorable, or None when it is fine."""
    if "\x00" in text:
        return "holds a NUL byte (\\u0000), which cannot be stored"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        code = ord(text[error.start])
        return f"holds a lone surrogate (U+{code:04X}), which is not valid Unicode"
    return None


def json_problem(document: Any) -> str | None:
    """The first string (key or value) in a parsed JSON document that `text_problem` refuses,
    named by its path. Iterative, so no nesting depth can exhaust the stack."""
    pending: list[tuple[Any, str]] = [(document, "")]
    while pending:
        value, path = pending.pop()
        if isinstance(value, str):
            problem = text_problem(value)
            if problem:
                return f"{f'`{path}`' if path else 'The body'} {problem}."
        elif isinstance(value, dict):
            for key, item in value.items():
                problem = text_problem(key)
                if problem:
                    return f"A key in {f'`{path}`' if path else 'the body'} {problem}."
                pending.append((item, f"{path}.{key}" if path else key))
        elif isinstance(value, list):
            pending.extend((item, f"{path}[{i}]") for i, item in enumerate(value))
    return None


def pairs_problem(pairs: Iterable[tuple[str, list[str]]], what: str) -> str | None:
    for name, values in pairs:
        for text in (name, *values):
            problem = text_problem(text)
            if problem:
                return f"The {what} field {name[:40]!r} {problem}."
    return None


FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def body_problem(request: HttpRequest) -> str | None:
    """Unstorable text in a JSON body. A body that does not parse, or is too large, is left
    to the view, which says so in its own words."""
    try:
        data = json.loads(request.body) if request.body else None
    except (ValueError, RecursionError, RequestDataTooBig):
        return None
    return json_problem(data)


def form_problem(request: HttpRequest) -> str | None:
    """Unstorable text in a form; one that cannot be read is left to the view."""
    try:
        return pairs_problem(request.POST.lists(), "form")
    except (SuspiciousOperation, ValueError, OSError):
        return None


class TextCheckMiddleware:
    """Query strings, forms and JSON bodies with unstorable text are refused with 400,
    before any view sees them: no endpoint, old or new, can store or choke on such text."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        problem = pairs_problem(request.GET.lists(), "query")
        if problem is None and request.content_type in FORM_TYPES:
            problem = form_problem(request)
        if problem is None and request.content_type == "application/json":
            problem = body_problem(request)
        if problem is None:
            return self.get_response(request)
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": problem}, status=400)
        return HttpResponseBadRequest(problem, content_type="text/plain; charset=utf-8")
