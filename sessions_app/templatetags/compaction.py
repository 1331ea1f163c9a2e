"""Template helpers for compaction: boundary labels, summary diffs, and the prompt chart.

Everything here is a pure function of values the view read, so the page never runs a query
while it renders. A summary diff is a list of (kind, line) pairs, never HTML: the template
escapes every line like any other text, so nothing in a summary can become markup. The
chart's geometry is computed here and drawn by the template as an inline SVG, on the
server: no charting script, and the same picture for every watcher.
"""

from __future__ import annotations

import difflib
from bisect import bisect_left
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from django import template

register = template.Library()

TRIGGERS = {
    "auto": "Compacted automatically",
    "manual": "Compacted by /compact",
    "overflow": "Compacted after a context overflow",
    "fork": "Started from a summary",
    "edit": "Summary edited",
    "clear": "Old tool outputs cleared",
}
CHART_WIDTH = 280
CHART_HEIGHT = 96
DOTS_UP_TO = 60


@register.filter
def trigger_label(trigger: str | None) -> str:
    return TRIGGERS.get(trigger or "auto", f"Compacted ({trigger})")


@register.filter
def unpinned(summary: str, data: dict[str, Any] | None) -> str:
    """What the summariser wrote: a boundary's summary without the pinned text it begins
    with (`data` is the boundary's data; a filter's argument must exist, `pinned` may not)."""
    text = (summary or "").strip()
    head = str((data or {}).get("pinned") or "").strip()
    return text[len(head) :].strip() if head and text.startswith(head) else text


@register.filter
def seconds_since(moment: str | None) -> int:
    """Whole seconds from an ISO 8601 time until now; 0 for none or nonsense."""
    try:
        then = datetime.fromisoformat(moment or "")
    except (TypeError, ValueError):
        return 0
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return max(0, int((datetime.now(UTC) - then).total_seconds()))


def line_diff(old: str, new: str, context: int = 2) -> list[tuple[str, str]]:
    """The changes from `old` to `new`, line by line: ("added" | "removed" | "same" | "gap",
    line). Unchanged runs keep `context` lines either side; a "gap" stands for the rest."""
    lines: list[tuple[str, str]] = []
    diff = difflib.unified_diff(old.splitlines(), new.splitlines(), n=context, lineterm="")
    for line in diff:
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            if lines or not line.startswith(("@@ -1,", "@@ -1 ", "@@ -0,")):
                lines.append(("gap", ""))
        elif line.startswith("+"):
            lines.append(("added", line[1:]))
        elif line.startswith("-"):
            lines.append(("removed", line[1:]))
        else:
            lines.append(("same", line[1:]))
    return lines


def prompt_chart(
    calls: Sequence[tuple[int, int | None]],
    boundaries: Sequence[tuple[int, str | None]],
    *,
    window: int | None,
    trigger_tokens: int | None,
) -> dict[str, Any]:
    """The geometry of the prompt-tokens chart: one point per model call (`calls` are
    (seq, prompt tokens), oldest first), a marker where each boundary fell between calls,
    and the trigger line. Calls are spaced evenly, so a long tool loop and a long pause look
    alike; the y axis is the window when the card declares one."""
    points = [(seq, tokens) for seq, tokens in calls if tokens]
    if not points:
        return {"empty": True, "calls": 0}
    peak = max(tokens for _, tokens in points)
    top = window or int(max(peak, trigger_tokens or 0) * 1.1) or 1
    top = max(top, peak)
    step = CHART_WIDTH / (len(points) - 1) if len(points) > 1 else 0.0

    # Coordinates are strings: a template must never localise them ("1,5" is no number).
    def x_at(index: float) -> str:
        return f"{CHART_WIDTH / 2 if len(points) == 1 else index * step:.1f}"

    def y_at(tokens: int) -> str:
        return f"{CHART_HEIGHT - min(tokens, top) / top * (CHART_HEIGHT - 4):.1f}"

    seqs = [seq for seq, _ in points]
    markers = []
    for seq, trigger in boundaries:
        before = bisect_left(seqs, seq)  # the calls made before this boundary
        x = x_at(min(max(before - 0.5, 0), len(points) - 1))
        markers.append({"x": x, "seq": seq, "trigger": trigger or "auto"})
    dots = [
        {"x": x_at(i), "y": y_at(tokens), "seq": seq, "tokens": tokens}
        for i, (seq, tokens) in enumerate(points)
    ]
    return {
        "empty": False,
        "width": CHART_WIDTH,
        "height": CHART_HEIGHT,
        "line": " ".join(f"{dot['x']},{dot['y']}" for dot in dots),
        "dots": dots if len(dots) <= DOTS_UP_TO else [],
        "markers": markers,
        "trigger_y": y_at(trigger_tokens) if trigger_tokens else None,
        "trigger_tokens": trigger_tokens,
        "calls": len(points),
        "peak": peak,
        "last": points[-1][1],
        "compactions": sum(1 for m in markers if m["trigger"] != "edit"),
        "edits": sum(1 for m in markers if m["trigger"] == "edit"),
    }
