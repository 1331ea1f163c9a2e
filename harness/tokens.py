"""Token counting: one ruler per wire, so every figure that decides something agrees.

A wire that has the model's own tokenizer counts exactly (`Tokenizer`); any other is counted
by the chars/4 estimate scaled by the session's calibration: the ratio of what the provider
reported for the last request to what the estimate said of that same request
(`Estimate.calibrated`). A raw estimate only decides before the first reported call. Counts
are per block of text; `overhead` is what a wire adds around each message (role markers),
which an exact count must include and a calibrated one already absorbs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

CHARS_PER_TOKEN = 4
COUNTS_KEPT = 100_000  # remembered tokenizer counts, by text: entries and notes recur per call
CALIBRATION_RANGE = (0.05, 20.0)  # reported/estimated outside this is nonsense, not a ratio


def estimate_tokens(text: str) -> int:
    if not text:
        return 0
    return max(1, -(-len(text) // CHARS_PER_TOKEN))


class TokenCounter(Protocol):
    @property
    def overhead(self) -> int: ...

    def count(self, text: str) -> int: ...

    def calibrated(self, ratio: float | None, seq: int | None = None) -> TokenCounter: ...

    def describe(self) -> str: ...


@dataclass(frozen=True, kw_only=True)
class Estimate:
    """chars/4, times `ratio` once a provider has reported a count to calibrate it on."""

    ratio: float = 1.0
    calibrated_on: int | None = None  # the seq of the call the ratio comes from
    overhead: int = 0

    def count(self, text: str) -> int:
        return self.scaled(estimate_tokens(text))

    def scaled(self, raw: int) -> int:
        """The count of a text whose raw estimate is `raw`."""
        return raw if self.ratio == 1.0 else math.ceil(raw * self.ratio)

    def scaled_sum(self, raws: Iterable[int]) -> int:
        """`sum(map(self.scaled, raws))`, looped in C: a call sums every block in context
        under the calibration its last call's usage gave."""
        if self.ratio == 1.0:
            return sum(raws)
        return sum(map(math.ceil, map(self.ratio.__mul__, raws)))

    def calibrated(self, ratio: float | None, seq: int | None = None) -> TokenCounter:
        if ratio is None:
            return self
        return Estimate(ratio=ratio, calibrated_on=seq, overhead=self.overhead)

    def describe(self) -> str:
        if self.calibrated_on is None:
            return "estimated at 4 characters a token (no call reported a count yet)"
        return f"estimates × {self.ratio:.2f}, calibrated on the call at entry {self.calibrated_on}"


_COUNTS: dict[tuple[str, int, int], int] = {}


@dataclass(frozen=True, kw_only=True)
class Tokenizer:
    """The model's own tokenizer: exact, so calibration never applies.

    Every call counts the same log entries and memory notes again, and a tokenizer is slow
    next to the estimate, so counts are remembered by text (its hash and length), and
    forgotten all at once past `COUNTS_KEPT`.
    """

    name: str
    encode: Callable[[str], int]
    overhead: int = 0

    def count(self, text: str) -> int:
        if not text:
            return 0
        key = (self.name, hash(text), len(text))
        tokens = _COUNTS.get(key)
        if tokens is None:
            if len(_COUNTS) >= COUNTS_KEPT:
                _COUNTS.clear()
            tokens = _COUNTS[key] = self.encode(text)
        return tokens

    def calibrated(self, ratio: float | None, seq: int | None = None) -> TokenCounter:
        return self

    def describe(self) -> str:
        return f"counted with the model's tokenizer ({self.name})"


ESTIMATE = Estimate()


def calibration(reported: object, estimated: object) -> float | None:
    """reported/estimated for one request, or None when either is not a sane count."""
    if not (isinstance(reported, int) and isinstance(estimated, int)):
        return None
    if isinstance(reported, bool) or isinstance(estimated, bool) or estimated <= 0:
        return None
    ratio = reported / estimated
    low, high = CALIBRATION_RANGE
    return ratio if low <= ratio <= high else None
