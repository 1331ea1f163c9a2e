"""`search_history {"query"}` and `read_entry {"seq", "offset"?}`: the log is recoverable.

A compaction drops detail from the model's view, never from the log. These tools search and
read the whole log, both sides of every boundary, so a path or a number the summary lost can
be found again, and a tool output shown as a preview can be read whole, a page at a time.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from harness.messages import LogEntry
from harness.tools.base import Text, ToolContext, ToolOutcome, TypedTool, refused

MAX_QUERY = 500
MAX_HITS = 20
EXCERPT = 120
PAGE = 20_000
MAX_SEQ = 2**53 - 1  # within the store's bigint, and exact in every JSON client


class SearchArgs(BaseModel):
    query: Text = Field(max_length=MAX_QUERY, description="Text to find (any case).")


class ReadArgs(BaseModel):
    seq: int = Field(ge=1, le=MAX_SEQ)
    offset: int = Field(
        default=0, ge=0, le=MAX_SEQ, description="Character to start from; default 0."
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


class SearchHistory(TypedTool[SearchArgs]):
    name = "search_history"
    description = (
        "Search this session's whole log, including what compaction folded into the summary. "
        "Returns matching entries with their seq and an excerpt; read one with read_entry."
    )
    Args = SearchArgs

    async def call(self, args: SearchArgs, context: ToolContext) -> ToolOutcome:
        assert context.log is not None, "search_history needs the log"
        hits = await context.log.search(context.session_id, args.query, MAX_HITS + 1)
        if not hits:
            return ToolOutcome(text=f"No entry mentions {args.query!r}.")
        lines = [
            f"seq {e.seq} ({label(e)}): {excerpt(e.content, args.query)}" for e in hits[:MAX_HITS]
        ]
        more = "\n(more matches: narrow the query)" if len(hits) > MAX_HITS else ""
        return ToolOutcome(text="\n".join(lines) + more)


class ReadEntry(TypedTool[ReadArgs]):
    name = "read_entry"
    description = (
        "Read one entry of this session's log whole, by seq (from search_history, or from a "
        "tool output shown as a preview). Long entries come in pages: pass offset to go on."
    )
    Args = ReadArgs

    async def call(self, args: ReadArgs, context: ToolContext) -> ToolOutcome:
        seq, offset = args.seq, args.offset
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
