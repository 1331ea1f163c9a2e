"""Memory spaces in the core: the values, the port the apps implement, and the rendered block.

Memory is context, not a retrieval layer: every selected space is rendered into the system
block on every call, re-read through `MemorySource.selected` each time, so a teammate's edit
applies on the next call and no compaction can lose a rule (memory is never summarised).

`render_memory(spaces, counter)` is a pure function. Per space, in the order given:

1. **Hot rules** (pinned notes), ordered by title (a person controls the order by naming
   them), fill at most `HOT_SHARE` (half) of the space's `budget_tokens`.
2. **The other notes**, newest first (`updated_at`, then title), fill what the hot rules
   left of the budget.

A note goes in whole or not at all, and one that does not fit is skipped (a later, smaller
note may still fit). What a space's budget pays for is its notes as rendered (heading and
body); the space's own heading and the truncation line are not charged to it, so a
truncation can always be named. Nothing is ever left out silently: every note left out is
named inside the block, in a line that starts `memory truncated:`, and returned in
`MemoryBlock.truncated` (the UI and `GET /context` show the same entries). Notes left out
of context stay readable with the `memory` tool. Every figure is counted by the counter
given (the session's ruler), so memory tokens agree with the rest of the context.

Writes go through `MemorySource` (the tool never stores anything itself) and name the
session and the seq of the `assistant` entry that made the call, so every revision says
which agent step wrote it. A write carries the version it was computed from; a stale one
raises `MemoryConflict` with the note as it is now. A refusal the model can act on (a
read-only or unknown space, a duplicate title, a note too large) raises `MemoryRefused`.
Space names must not contain `/` (the tool addresses notes as
`/memories/<space name>/<note title>.md`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from harness.tokens import TokenCounter

HOT_SHARE = 0.5  # of a space's budget, the most its hot rules may take
MAX_NOTE_CHARS = 20_000  # a note larger than this is refused: split it
MAX_TITLE_CHARS = 200
NAMED_IN_TEXT = 30  # titles a truncation line lists; `truncated` holds them all

Mode = Literal["read", "write"]


@dataclass(frozen=True, kw_only=True)
class MemoryNote:
    title: str
    body: str
    pinned: bool = False
    version: int = 1
    updated_at: datetime


@dataclass(frozen=True, kw_only=True)
class MemorySpace:
    """A space as one session selected it: `mode` is that selection's, not the space's."""

    id: int
    name: str
    description: str = ""
    mode: Mode
    budget_tokens: int
    notes: tuple[MemoryNote, ...] = ()

    def note(self, title: str) -> MemoryNote | None:
        return next((n for n in self.notes if n.title == title), None)


class MemoryRefused(Exception):
    """A write the source will not make; the message is for the model."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class MemoryConflict(Exception):
    """The note changed since the version the write was computed from.

    `current` is the note as it is now, or None when it was deleted meanwhile.
    """

    def __init__(self, current: MemoryNote | None) -> None:
        super().__init__("the note changed meanwhile")
        self.current = current


class MemorySource(Protocol):
    """The memory spaces a session selected, and the writes its `memory` tool makes.

    `seq` is the seq of the `assistant` entry whose call writes: each write is a revision
    naming the session and that seq. `version` is the note's version the write was
    computed from (None to create); a stale one raises `MemoryConflict`.
    """

    async def selected(self, session_id: int) -> Sequence[MemorySpace]:
        """The session's selected spaces with all their notes, read afresh on every call."""
        ...

    async def note_write(
        self,
        session_id: int,
        *,
        space: str,
        title: str,
        body: str,
        version: int | None,
        seq: int,
    ) -> MemoryNote:
        """Create (`version` None) or replace a note's body; returns it as stored."""
        ...

    async def note_delete(
        self, session_id: int, *, space: str, title: str, version: int, seq: int
    ) -> None: ...

    async def note_rename(
        self,
        session_id: int,
        *,
        space: str,
        title: str,
        new_space: str,
        new_title: str,
        version: int,
        seq: int,
    ) -> MemoryNote:
        """Move a note to a new title, in the same or another write-selected space."""
        ...


# Rendering ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Truncation:
    """Notes of one space left out of context: `tokens` is what they would have cost."""

    space: str
    notes: tuple[str, ...]
    budget: int
    tokens: int
    hot: bool = False  # hot rules over their own share of the budget

    def to_data(self) -> dict[str, Any]:
        return {
            "space": self.space,
            "notes": list(self.notes),
            "budget": self.budget,
            "tokens": self.tokens,
            "hot": self.hot,
        }


@dataclass(frozen=True, kw_only=True)
class SpaceCost:
    """What one space put in context against its budget."""

    space: str
    tokens: int
    budget: int
    notes: int  # how many of its notes are in


@dataclass(frozen=True, kw_only=True)
class MemoryBlock:
    text: str  # empty when no space is selected
    tokens: int
    truncated: tuple[Truncation, ...] = ()
    costs: tuple[SpaceCost, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Fitted:
    kept: tuple[str, ...]  # the notes' texts
    tokens: int
    left: tuple[str, ...]  # the titles left out
    left_tokens: int


def render_memory(spaces: Sequence[MemorySpace], counter: TokenCounter) -> MemoryBlock:
    """The memory block of the system prompt, and what it left out (see the module doc)."""
    if not spaces:
        return MemoryBlock(text="", tokens=0)
    parts = ["# Memory", MEMORY_PREAMBLE]
    truncated: list[Truncation] = []
    costs: list[SpaceCost] = []
    for space in spaces:
        text, cuts, cost = rendered_space(space, counter)
        parts.append(text)
        truncated.extend(cuts)
        costs.append(cost)
    text = "\n\n".join(parts)
    return MemoryBlock(
        text=text, tokens=counter.count(text), truncated=tuple(truncated), costs=tuple(costs)
    )


MEMORY_PREAMBLE = (
    "Notes kept across sessions, in spaces. Each note is also the file "
    "/memories/<space>/<title>.md of the memory tool; you can change only the spaces "
    "marked read and write."
)


def rendered_space(
    space: MemorySpace, counter: TokenCounter
) -> tuple[str, list[Truncation], SpaceCost]:
    hot_budget = int(space.budget_tokens * HOT_SHARE)
    rules, others = in_order(space)
    hot = fitted(rules, hot_budget, counter)
    rest = fitted(others, space.budget_tokens - hot.tokens, counter)
    cuts = [
        cut
        for cut in (
            cut_of(space, hot, hot_budget, hot=True),
            cut_of(space, rest, space.budget_tokens),
        )
        if cut is not None
    ]
    lines = [space_heading(space)]
    if hot.kept:
        lines += ["### Hot rules", *hot.kept]
    if rest.kept:
        lines += ["### Notes", *rest.kept]
    lines += [truncation_line(cut) for cut in cuts]
    cost = SpaceCost(
        space=space.name,
        tokens=hot.tokens + rest.tokens,
        budget=space.budget_tokens,
        notes=len(hot.kept) + len(rest.kept),
    )
    return "\n\n".join(lines), cuts, cost


def in_order(space: MemorySpace) -> tuple[list[MemoryNote], list[MemoryNote]]:
    """The hot rules by title, and the other notes newest first (then by title)."""
    rules = sorted((n for n in space.notes if n.pinned), key=lambda n: n.title)
    by_title = sorted((n for n in space.notes if not n.pinned), key=lambda n: n.title)
    return rules, sorted(by_title, key=lambda n: n.updated_at, reverse=True)


def fitted(notes: Sequence[MemoryNote], budget: int, counter: TokenCounter) -> Fitted:
    """Each note whole, in order, while it fits; one that does not is skipped, not the rest."""
    kept: list[str] = []
    left: list[str] = []
    used = left_tokens = 0
    for note in notes:
        text = note_text(note)
        tokens = counter.count(text)
        if used + tokens <= budget:
            kept.append(text)
            used += tokens
        else:
            left.append(note.title)
            left_tokens += tokens
    return Fitted(kept=tuple(kept), tokens=used, left=tuple(left), left_tokens=left_tokens)


def cut_of(space: MemorySpace, fit: Fitted, budget: int, *, hot: bool = False) -> Truncation | None:
    if not fit.left:
        return None
    return Truncation(
        space=space.name, notes=fit.left, budget=budget, tokens=fit.left_tokens, hot=hot
    )


def space_heading(space: MemorySpace) -> str:
    mode = "read and write" if space.mode == "write" else "read only"
    heading = f"## Space `{space.name}` ({mode}): /memories/{space.name}"
    return f"{heading}\n{space.description}" if space.description.strip() else heading


def note_text(note: MemoryNote) -> str:
    return f"#### {note.title}\n{note.body}"


def truncation_line(cut: Truncation) -> str:
    count = len(cut.notes)
    what = f"{count} {'hot rule' if cut.hot else 'note'}{'s' if count != 1 else ''}"
    over = (
        f"over its hot-rule share ({cut.budget:,} tokens)"
        if cut.hot
        else f"over its {cut.budget:,}-token budget"
    )
    named = ", ".join(cut.notes[:NAMED_IN_TEXT])
    more = f", and {count - NAMED_IN_TEXT} more" if count > NAMED_IN_TEXT else ""
    return (
        f"memory truncated: {what} of space `{cut.space}` {over}, "
        f"{cut.tokens:,} tokens left out: {named}{more}. "
        f"Read them with the memory tool: view /memories/{cut.space}/<title>.md"
    )
