"""Request bodies as JSON bytes, each message encoded once and reused while it is in context.

A wire builds its body as plain JSON and hands the bytes to its SDK's low-level `post`, so the
SDK's per-message TypedDict transform never walks the history (auth, retries, SSE parsing and
errors stay the SDK's). `dumps` encodes as the SDKs do (UTF-8, compact, no NaN), and the
pieces compose: `obj([(k, v), …])` is byte for byte `dumps(dict([(k, v), …]))`, with a value
given as `Raw` bytes taken as already encoded.

Log entries never change once written, and the context builder hands the same `Message`
object for the same entry from call to call (`harness.context_cache`), so `Pieces` keeps each
message's encoding by the message's identity and what else decides its form (the replay
rule's answer, its place): the next request costs its new messages, not the whole context.
Identity is safe as a key because the cache holds the message itself, so its id cannot be
reused while the entry lives; the cache is bounded in items and bytes, least recently used
first out.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

MAX_PIECES = 20_000
MAX_BYTES = 16 * 1024 * 1024  # about 4M tokens: some thirty full 128k contexts
RUNS_KEPT = 64  # conversations whose last call's pieces are kept in order (`Pieces.each`)
JOINS_BYTES = 32 * 1024 * 1024  # the conversations' last joined bodies (`Pieces.joined`)


def dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


@dataclass(frozen=True, slots=True)
class Raw:
    """JSON that is already encoded."""

    data: bytes


def array(items: Iterable[bytes]) -> Raw:
    return Raw(b"[" + b",".join(items) + b"]")


def obj(fields: Iterable[tuple[str, Any]]) -> bytes:
    parts = [
        dumps(key) + b":" + (value.data if isinstance(value, Raw) else dumps(value))
        for key, value in fields
    ]
    return b"{" + b",".join(parts) + b"}"


def with_field(encoded: bytes, key: str, value: Any) -> bytes:
    """An encoded object with one more field at its end, as setting the key on the dict would
    give (the key must be new)."""
    extra = dumps(key) + b":" + dumps(value)
    return encoded[:-1] + (b"," if encoded != b"{}" else b"") + extra + b"}"


class Pieces:
    """Encoded forms of messages, by the message's identity and a key for what else decides
    the form. Thread safe: one provider serves every session on its card."""

    def __init__(self, max_items: int = MAX_PIECES, max_bytes: int = MAX_BYTES) -> None:
        self.max_items = max_items
        self.max_bytes = max_bytes
        self.size = 0
        self._items: OrderedDict[tuple[int, Hashable], tuple[object, tuple[bytes, ...], int]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()
        # Per conversation, by its first message's id (the tuple holds the message, so the
        # id is not reused while kept): the last call's messages, keys and pieces.
        self._lists: OrderedDict[tuple[Hashable, tuple[int, ...]], tuple[tuple[object, ...], Raw]] = OrderedDict()  # fmt: skip
        self._runs: OrderedDict[int, tuple[tuple[object, ...], tuple[Hashable, ...], list[tuple[bytes, ...]]]] = OrderedDict()  # fmt: skip
        self._joins: OrderedDict[int, tuple[tuple[object, ...], tuple[Hashable, ...], bytes]] = OrderedDict()  # fmt: skip
        self._joins_size = 0

    def get(
        self, message: object, key: Hashable, make: Callable[[], tuple[bytes, ...]]
    ) -> tuple[bytes, ...]:
        """The encoded pieces of `message` under `key`, made by `make` when not kept."""
        slot = (id(message), key)
        with self._lock:
            kept = self._items.get(slot)
            if kept is not None and kept[0] is message:
                self._items.move_to_end(slot)
                return kept[1]
        value = make()
        size = sum(len(piece) for piece in value)
        with self._lock:
            old = self._items.pop(slot, None)
            if old is not None:
                self.size -= old[2]
            self._items[slot] = (message, value, size)
            self.size += size
            while self._items and (len(self._items) > self.max_items or self.size > self.max_bytes):
                _, (_, _, dropped) = self._items.popitem(last=False)
                self.size -= dropped
        return value

    def each(
        self,
        messages: Sequence[object],
        keys: Sequence[Hashable],
        make: Callable[[object, Hashable], tuple[bytes, ...]],
    ) -> list[tuple[bytes, ...]]:
        """`[self.get(m, k, …) for m, k in zip(messages, keys)]`, reusing the answer of the
        previous call of the same conversation (the one whose first message is the same
        object) as far as both have the same messages under the same keys: a call whose
        context grew by its end looks up only the new messages."""
        if not messages:
            return []
        with self._lock:
            last = self._runs.get(id(messages[0]))
        same = 0
        if last is not None and last[0][0] is messages[0]:
            kept_messages, kept_keys, kept = last
            limit = min(len(kept_messages), len(messages))
            while (
                same < limit
                and kept_messages[same] is messages[same]
                and kept_keys[same] == keys[same]
            ):
                same += 1
            out = kept[:same]
        else:
            out = []
        out += [make(messages[i], keys[i]) for i in range(same, len(messages))]
        with self._lock:
            self._runs[id(messages[0])] = (tuple(messages), tuple(keys), out)
            self._runs.move_to_end(id(messages[0]))
            while len(self._runs) > RUNS_KEPT:
                self._runs.popitem(last=False)
        return list(out)

    def joined(
        self,
        messages: Sequence[object],
        keys: tuple[Hashable, ...],
        make: Callable[[object, Hashable], tuple[bytes, ...]],
    ) -> bytes:
        """`b",".join` of every piece of every message, in order, made from the last answer
        for the same conversation (its first message the same object) when the messages
        begin with that answer's messages under the same keys: a call whose context grew by
        its end encodes and joins only its new messages, and copies the rest as one block.

        The prefix is compared as tuples (in C: each element by identity first, else by
        equality, and equal messages encode alike), not message by message in Python, so a
        call costs its new messages and a copy of the kept bytes, not a walk of the whole
        context."""
        if not messages:
            return b""
        head = id(messages[0])
        with self._lock:
            last = self._joins.get(head)
        kept = len(last[0]) if last is not None else 0
        if (
            last is None
            or last[0][0] is not messages[0]
            or kept > len(messages)
            or last[1] != keys[:kept]
            or last[0] != tuple(messages[:kept])
        ):
            kept, prefix = 0, b""
        else:
            prefix = last[2]
        new = [piece for i in range(kept, len(messages)) for piece in make(messages[i], keys[i])]
        data = b",".join([prefix, *new] if prefix else new)
        with self._lock:
            old = self._joins.pop(head, None)
            self._joins_size += len(data) - (len(old[2]) if old is not None else 0)
            self._joins[head] = (tuple(messages), keys, data)
            while len(self._joins) > RUNS_KEPT or self._joins_size > JOINS_BYTES:
                _, (_, _, dropped) = self._joins.popitem(last=False)
                self._joins_size -= len(dropped)
        return data

    def listed(self, items: Sequence[object], key: Hashable, value: Any) -> Raw:
        """`value` (the JSON of `items`, a request's tools) as encoded, kept by the items'
        identities and `key`: the same tools on every call of a session are encoded once. The
        entry holds the items, so their ids are not reused while it is kept."""
        slot = (key, tuple(map(id, items)))
        with self._lock:
            kept = self._lists.get(slot)
            if kept is not None:
                self._lists.move_to_end(slot)
                return kept[1]
        encoded = Raw(dumps(value))
        with self._lock:
            self._lists[slot] = (tuple(items), encoded)
            while len(self._lists) > RUNS_KEPT:
                self._lists.popitem(last=False)
        return encoded

    def __len__(self) -> int:
        return len(self._items)
