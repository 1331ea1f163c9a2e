"""`search_history {"query"}` and `read_entry {"seq", "offset"?}`: the log is recoverable.

A compaction drops detail from the model's view, never from the log. These tools search and
read the whole log, both sides of every boundary, so a path or a number the summary lost can
be found again, and a tool output shown as a preview can be read whole, a page at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.messages import LogEntry, ToolSpec
from harness.tools.base import ToolContext, ToolOutcome, refused

MAX_QUERY = 500
MAX_HITS = 20
EXCERPT = 120
PAGE = 20_000

SEARCH_SPEC = ToolSpec(
    name="search_history",
    description=(
        "Search this session's whole log, including what compaction folded into the summary. "
        "Returns matching entries with their seq and an excerpt; read one with read_entry."
    ),
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "Text to find (any case)."}},
        "required": ["query"],
    },
)

READ_SPEC = ToolSpec(
    name="read_entry",
    description=(
        "Read one entry of this session's log whole, by seq (from search_history, or from a "
        "tool output shown as a preview). Long entries come in pages: pass offset to go on."
    ),
    parameters={
        "type": "object",
        "properties": {
            "seq": {"type": "integer"},
            "offset": {"type": "integer", "description": "Character to start from; default 0."},
        },
        "required": ["seq"],
    },
)


def excerpt(text: str, query: str) -> str:
    at = text.lower().find(query.lower())
    start = max(0, at - EXCERPT // 2)
    piece = " ".join(text[start : start + EXCERPT + len(query)].split())
    return (
        ("…" if start else "") + piece + ("…" if start + EXCERPT + len(query) < len(text) else "")
    )


def label(entry: LogEntry) -> str:
    name = entry.data.get("name")
    return f"{entry.kind} {name}" if name else entry.kind


class SearchHistory:
    spec = SEARCH_SPEC

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return refused('"query" must be a non-empty string.')
        if len(query) > MAX_QUERY:
            return refused(f'"query" must be at most {MAX_QUERY} characters.')
        assert context.log is not None, "search_history needs the log"
        hits = await context.log.search(context.session_id, query.strip(), MAX_HITS + 1)
        if not hits:
            return ToolOutcome(text=f"No entry mentions {query.strip()!r}.")
        lines = [
            f"seq {e.seq} ({label(e)}): {excerpt(e.content, query.strip())}"
            for e in hits[:MAX_HITS]
        ]
        more = "\n(more matches: narrow the query)" if len(hits) > MAX_HITS else ""
        return ToolOutcome(text="\n".join(lines) + more)


class ReadEntry:
    spec = READ_SPEC

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        seq = arguments.get("seq")
        offset = arguments.get("offset", 0)
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
            return refused('"seq" must be a positive integer.')
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            return refused('"offset" must be a non-negative integer.')
        assert context.log is not None, "read_entry needs the log"
        entry = await context.log.read(context.session_id, seq)
        if entry is None:
            return refused(f"There is no entry {seq} in this session.")
        page = entry.content[offset : offset + PAGE]
        end = offset + len(page)
        header = f"Entry {seq} ({label(entry)}), characters {offset}–{end} of {len(entry.content)}"
        tail = (
            f'\n[more: read_entry {{"seq": {seq}, "offset": {end}}}]'
            if end < len(entry.content)
            else ""
        )
        return ToolOutcome(text=f"{header}:\n{page}{tail}")
