"""Where a compaction cuts, and what clearing old tool outputs would clear.

Both walk back from the end of the log measuring each entry as the context shows it
(`sizes`, by seq, in the session's counter), so the recent history a cut keeps is the
recent budget in the provider's tokens, not in an estimate.

- **Cut** (`plan_cut`): keep whole turns while the recent-history budget lasts; a turn too
  large for the budget alone is cut at a step (before an assistant entry). A cut never falls
  between a tool call and its result, because calls and results never start a turn or a step.
- **Clearing** (`clear_point`): old tool outputs outside the recent budget become stubs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.context import Context
from harness.messages import LogEntry

TURN_STARTS = ("user", "answer", "timer", "subagent_result", "command")
Sizes = Mapping[int, int]


def sizes_of(context: Context) -> dict[int, int]:
    """Each entry's tokens as the context shows it (a call's filled-in result included)."""
    sizes: dict[int, int] = {}
    for block in context.blocks:
        if block.kind == "entry" and block.seq is not None:
            sizes[block.seq] = sizes.get(block.seq, 0) + block.tokens
    return sizes


def starts_turn(entry: LogEntry) -> bool:
    if entry.kind == "command":
        return bool(entry.data.get("expansion"))
    return entry.kind in TURN_STARTS


def plan_cut(entries: Sequence[LogEntry], budget: int, sizes: Sizes) -> int | None:
    """The new `first_kept_seq`, or None when nothing before it would be folded.

    `entries` are the model-visible entries since the current cut (boundaries ignored).
    """
    visible = [e for e in entries if e.kind not in ("boundary", "notice")]
    if len(visible) < 2:
        return None
    suffix = 0
    turn_cut: int | None = None
    step_cut: int | None = None
    last_step: int | None = None
    for entry in reversed(visible):
        suffix += sizes.get(entry.seq, 0)
        is_turn = starts_turn(entry)
        is_step = entry.kind == "assistant"
        if (is_turn or is_step) and last_step is None:
            last_step = entry.seq
        if suffix <= budget:
            if is_turn:
                turn_cut = entry.seq
            if is_turn or is_step:
                step_cut = entry.seq
    cut = turn_cut or step_cut or last_step
    if cut is None or cut <= visible[0].seq:
        return None
    return cut


def clear_point(entries: Sequence[LogEntry], budget: int, already: int, sizes: Sizes) -> int | None:
    """Clear tool outputs before this seq (outside the recent budget), or None if none new."""
    suffix = 0
    point: int | None = None
    for entry in reversed(entries):
        suffix += sizes.get(entry.seq, 0)
        if suffix > budget:
            point = entry.seq + 1
            break
    if point is None:
        return None
    olds = [e for e in entries if e.kind == "tool_result" and already <= e.seq < point]
    return point if olds else None
