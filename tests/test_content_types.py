"""Twisted's content-type parse, kept per value (`horsie_site.content_types`): the same
answers as twisted's own, each distinct value parsed once, and the cache bounded."""

from __future__ import annotations

import pytest
from twisted.web import http

from horsie_site import content_types

VALUES = [
    b"application/json",
    b"application/json; charset=utf-8",
    b"Application/X-WWW-Form-Urlencoded; charset=UTF-8",
    b"multipart/form-data; boundary=----x",
    b"text/plain;;;=",
    b"",
    b"\xff\xfe nonsense",
]


@pytest.fixture
def counted(monkeypatch):
    """Twisted's own parser, counting its calls, wrapped as the process wraps it."""
    original = http._parseContentType
    calls = []

    def parse(line):
        calls.append(line)
        return original(line)

    monkeypatch.setattr(http, "_parseContentType", parse)
    content_types.install()
    content_types.install()  # a second install wraps nothing more
    return original, calls


def test_the_answers_are_twisteds_and_each_value_is_parsed_once(counted):
    original, calls = counted
    for _ in range(3):
        assert [http._parseContentType(v) for v in VALUES] == [original(v) for v in VALUES]
    assert calls == VALUES
    assert http._parseContentType(b"application/x-www-form-urlencoded") == (
        b"application/x-www-form-urlencoded"
    )


def test_the_cache_is_bounded(counted):
    _, calls = counted
    for n in range(content_types.KEPT * 3):
        http._parseContentType(b"multipart/form-data; boundary=%d" % n)
    assert http._parseContentType.cache_info().currsize == content_types.KEPT
    assert len(calls) == content_types.KEPT * 3
