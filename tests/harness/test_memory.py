"""Memory spaces in the core: the block the model reads, and the `memory` tool over them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from harness.memory import (
    MAX_NOTE_CHARS,
    MemoryNote,
    MemorySpace,
    Truncation,
    render_memory,
)
from harness.state import SessionState
from harness.testing import InMemorySource
from harness.tokens import ESTIMATE, Tokenizer
from harness.tools.base import ToolContext
from harness.tools.memory import Memory

DAY = datetime(2025, 3, 1, tzinfo=UTC)
DENSE = Tokenizer(name="dense", encode=lambda text: -(-len(text) // 2))  # 2 chars a token


def note(title: str, body: str, *, age: int = 0, pinned: bool = False, version: int = 1):
    return MemoryNote(
        title=title,
        body=body,
        pinned=pinned,
        version=version,
        updated_at=DAY - timedelta(hours=age),
    )


def space(name: str, *notes: MemoryNote, mode: str = "write", budget: int = 1_000, sid: int = 1):
    return MemorySpace(
        id=sid, name=name, description=f"{name} notes", mode=mode, budget_tokens=budget, notes=notes
    )


def tokens(n: MemoryNote) -> int:
    return DENSE.count(f"#### {n.title}\n{n.body}")


# The block -------------------------------------------------------------------------------


def test_no_selected_space_renders_nothing():
    block = render_memory([], DENSE)
    assert (block.text, block.tokens, block.truncated) == ("", 0, ())


def test_hot_rules_come_first_then_the_other_notes_newest_first():
    conventions = space(
        "conventions",
        note("old", "Tabs were once fine.", age=30),
        note("Never push to main", "Open a PR.", age=50, pinned=True),
        note("new", "Use ruff.", age=1),
        note("A rule", "Keep functions short.", age=2, pinned=True),
        note("middle", "Python 3.11.", age=10),
    )
    block = render_memory([conventions], DENSE)
    text = block.text
    order = ["A rule", "Never push to main", "new", "middle", "old"]
    assert [text.index(f"#### {t}\n") for t in order] == sorted(
        text.index(f"#### {t}\n") for t in order
    )
    assert text.index("### Hot rules") < text.index("### Notes")
    assert "## Space `conventions` (read and write): /memories/conventions" in text
    assert block.truncated == () and "memory truncated" not in text
    assert block.tokens == DENSE.count(text)
    assert block.costs[0].tokens == sum(tokens(n) for n in conventions.notes)


def test_notes_over_the_budget_are_named_in_the_block_and_returned():
    notes = [note(f"note {i:02}", "x" * 100, age=i) for i in range(12)]  # newest: note 00
    each = tokens(notes[0])
    conventions = space("conventions", *notes, budget=3 * each, mode="read")
    block = render_memory([conventions], DENSE)
    left = tuple(f"note {i:02}" for i in range(3, 12))
    assert block.truncated == (
        Truncation(space="conventions", notes=left, budget=3 * each, tokens=9 * each),
    )
    assert all(f"#### note {i:02}\n" in block.text for i in range(3))
    assert not any(f"#### {t}\n" in block.text for t in left)
    line = next(x for x in block.text.split("\n") if x.startswith("memory truncated:"))
    assert line.startswith(
        f"memory truncated: 9 notes of space `conventions` over its {3 * each:,}-token budget, "
        f"{9 * each:,} tokens left out: " + ", ".join(left) + "."
    )
    assert "view /memories/conventions/<title>.md" in line
    assert "(read only)" in block.text
    assert block.truncated[0].to_data() == {
        "space": "conventions",
        "notes": list(left),
        "budget": 3 * each,
        "tokens": 9 * each,
        "hot": False,
    }


def test_the_ruler_decides_what_fits_a_denser_counter_keeps_fewer_notes():
    notes = [note(f"n{i}", "y" * 200, age=i) for i in range(6)]
    budget = 4 * ESTIMATE.count("#### n0\n" + "y" * 200)
    estimated = render_memory([space("s", *notes, budget=budget)], ESTIMATE)
    dense = render_memory([space("s", *notes, budget=budget)], DENSE)
    assert estimated.truncated[0].notes == ("n4", "n5")
    assert dense.truncated[0].notes == ("n2", "n3", "n4", "n5")
    assert dense.costs[0].tokens <= budget and estimated.costs[0].tokens <= budget


def test_hot_rules_keep_to_half_the_budget_and_are_never_dropped_silently():
    rules = [note(f"rule {c}", "z" * 180, pinned=True) for c in "abc"]
    each = tokens(rules[0])
    others = [note(t, "w" * 180, age=a) for t, a in (("fresh", 1), ("stale", 9), ("mid", 5))]
    s = space("team", *rules, *others, budget=4 * each)  # hot share: 2 rules' worth
    block = render_memory([s], DENSE)
    hot, rest = block.truncated
    assert (hot.hot, hot.notes, hot.budget, hot.tokens) == (True, ("rule c",), 2 * each, each)
    assert (rest.hot, rest.notes) == (False, ("stale",))
    assert "memory truncated: 1 hot rule of space `team` over its hot-rule share" in block.text
    assert "#### rule a\n" in block.text and "#### fresh\n" in block.text


def test_a_note_too_big_is_skipped_and_smaller_older_ones_still_fit():
    big = note("huge", "q" * 5_000, age=0)
    small = note("small", "ok", age=5)
    block = render_memory([space("s", big, small, budget=100)], DENSE)
    assert block.truncated[0].notes == ("huge",)
    assert "#### small\nok" in block.text


def test_every_space_is_rendered_within_its_own_budget():
    a = space("a", note("a1", "alpha " * 50), budget=10, sid=1)
    b = space("b", note("b1", "beta"), budget=1_000, sid=2, mode="read")
    block = render_memory([a, b], DENSE)
    assert [t.space for t in block.truncated] == ["a"]
    assert "#### b1\nbeta" in block.text
    assert [(c.space, c.notes) for c in block.costs] == [("a", 0), ("b", 1)]


# The tool --------------------------------------------------------------------------------


def source() -> InMemorySource:
    return InMemorySource(
        spaces=[
            space(
                "conventions",
                note("Style", "line one\nline two\nline three", version=3),
                note("Rule", "Never push to main.", pinned=True, age=4),
                sid=1,
            ),
            space("handbook", note("Deploy", "Run make deploy."), mode="read", sid=2),
        ]
    )


async def memory(src: InMemorySource | None, call_seq: int | None = 41, **arguments):
    context = ToolContext(session_id=7, memory=src, call_seq=call_seq, state=SessionState(seq=99))
    return await Memory().run(arguments, context)


def body(src: InMemorySource, space_name: str, title: str) -> str | None:
    named = next(s for s in src.spaces if s.name == space_name)
    found = named.note(title)
    return found.body if found else None


async def test_view_lists_the_selected_spaces_then_a_space_then_reads_a_note():
    src = source()
    root = await memory(src, command="view", path="/memories")
    assert "- /memories/conventions (read and write; 2 notes): conventions notes" in root.text
    assert "- /memories/handbook (read only; 1 notes)" in root.text
    listing = await memory(src, command="view", path="/memories/conventions/")
    lines = listing.text.split("\n")
    assert lines[1].startswith("- /memories/conventions/Rule.md (pinned, version 1")
    assert lines[2].startswith("- /memories/conventions/Style.md (version 3")
    read = await memory(src, command="view", path="/memories/conventions/Style.md")
    assert read.text == (
        "/memories/conventions/Style.md (version 3), lines 1-3 of 3:\n"
        "     1\tline one\n     2\tline two\n     3\tline three"
    )
    part = await memory(src, command="view", path="/memories/handbook/Deploy", view_range=[1, -1])
    assert not part.is_error and "Run make deploy." in part.text
    ranged = await memory(
        src, command="view", path="/memories/conventions/Style.md", view_range=[2, 3]
    )
    assert ranged.text.endswith("     2\tline two\n     3\tline three")
    assert src.revisions == []


@pytest.mark.parametrize("view_range", [[0, 2], [2, 1], [1, 4], [4, -1]])
async def test_a_view_range_outside_the_note_is_refused(view_range):
    out = await memory(
        source(), command="view", path="/memories/conventions/Style.md", view_range=view_range
    )
    assert out.is_error and "which has 3 lines" in out.text


async def test_create_writes_a_revision_naming_the_session_and_the_call():
    src = source()
    out = await memory(
        src, command="create", path="/memories/conventions/Paths.md", file_text="Use /srv."
    )
    assert not out.is_error and out.text == "Created /memories/conventions/Paths.md (version 1)."
    assert out.data["memory"] == {"space": "conventions", "title": "Paths", "version": 1}
    assert body(src, "conventions", "Paths") == "Use /srv."
    assert src.revisions[-1] == {
        "space": "conventions",
        "title": "Paths",
        "before": None,
        "after": "Use /srv.",
        "by": "session 7 at seq 41",
    }


async def test_without_a_call_seq_the_state_seq_is_the_call():
    src = source()
    await memory(src, call_seq=None, command="delete", path="/memories/conventions/Rule.md")
    assert src.revisions[-1]["by"] == "session 7 at seq 99"


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (
            {"command": "create", "path": "/memories/handbook/New.md", "file_text": "x"},
            "Space `handbook` is selected read only in this session: its notes cannot change. "
            "Spaces you can write: `conventions`.",
        ),
        (
            {
                "command": "str_replace",
                "path": "/memories/handbook/Deploy.md",
                "old_str": "Run",
                "new_str": "Do",
            },
            "selected read only",
        ),
        (
            {
                "command": "insert",
                "path": "/memories/handbook/Deploy.md",
                "insert_line": 0,
                "insert_text": "x",
            },
            "read only",
        ),
        ({"command": "delete", "path": "/memories/handbook/Deploy.md"}, "read only"),
        (
            {
                "command": "rename",
                "old_path": "/memories/handbook/Deploy.md",
                "new_path": "/memories/conventions/Deploy.md",
            },
            "read only",
        ),
        (
            {
                "command": "rename",
                "old_path": "/memories/conventions/Rule.md",
                "new_path": "/memories/handbook/Rule.md",
            },
            "read only",
        ),
        (
            {"command": "create", "path": "/memories/conventions/Style.md", "file_text": "x"},
            "/memories/conventions/Style.md already exists (version 3)",
        ),
        (
            {"command": "create", "path": "/memories/conventions", "file_text": "x"},
            "create needs a note path",
        ),
        (
            {
                "command": "create",
                "path": "/memories/conventions/Big.md",
                "file_text": "x" * (MAX_NOTE_CHARS + 1),
            },
            f"file_text must be at most {MAX_NOTE_CHARS} characters",
        ),
        (
            {
                "command": "str_replace",
                "path": "/memories/conventions/Style.md",
                "old_str": "line",
                "new_str": "x" * MAX_NOTE_CHARS,
            },
            "occurs 3 times in /memories/conventions/Style.md (lines 1, 2, 3)",
        ),
        (
            {
                "command": "str_replace",
                "path": "/memories/conventions/Style.md",
                "old_str": "line one",
                "new_str": "x" * MAX_NOTE_CHARS,
            },
            "a note holds at most 20,000",
        ),
        (
            {
                "command": "str_replace",
                "path": "/memories/conventions/Style.md",
                "old_str": "line four",
                "new_str": "x",
            },
            "old_str does not occur in /memories/conventions/Style.md verbatim",
        ),
        (
            {
                "command": "insert",
                "path": "/memories/conventions/Style.md",
                "insert_line": 4,
                "insert_text": "x",
            },
            "it has 3 lines, so give 0 to 3",
        ),
        (
            {"command": "delete", "path": "/memories/conventions"},
            "/memories/conventions is not a note",
        ),
        (
            {"command": "delete", "path": "/memories/conventions/Gone.md"},
            "There is no note /memories/conventions/Gone.md",
        ),
        (
            {"command": "view", "path": "/memories/conventions/Gone.md"},
            "There is no note /memories/conventions/Gone.md",
        ),
        (
            {
                "command": "rename",
                "old_path": "/memories/conventions/Rule.md",
                "new_path": "/memories/conventions/Style.md",
            },
            "/memories/conventions/Style.md already exists",
        ),
        (
            {"command": "view", "path": "/memories/secrets"},
            "There is no selected memory space `secrets`. Selected: `conventions` (read and write), "
            "`handbook` (read only).",
        ),
    ],
)
async def test_refusals_are_error_results_and_change_nothing(arguments, says):
    src = source()
    before = list(src.spaces)
    out = await memory(src, **arguments)
    assert out.is_error and says in out.text, out.text
    assert src.spaces == before and src.revisions == []


@pytest.mark.parametrize(
    "path",
    [
        "/memories/../etc/passwd",
        "/memories/conventions/../handbook/Deploy.md",
        "/memories/conventions/..",
        "/memories/./conventions/Style.md",
        "/etc/passwd",
        "/memoriesX/conventions/Style.md",
        "memories/conventions/Style.md",
        "../memories/conventions/Style.md",
        "/memories/conventions//Style.md",
        "/memories/conventions/a/b.md",
        "/memories/conventions/.md",
        "/memories/conventions/ .md",
        "/memories/conventions/St\x00yle.md",
        "/memories/conventions/Style\n.md",
        "/memories\\conventions\\Style.md",
        "/memories/conventions/" + "t" * 201 + ".md",
    ],
)
async def test_paths_that_escape_or_name_nothing_are_refused(path):
    src = source()
    for arguments in (
        {"command": "view", "path": path},
        {"command": "create", "path": path, "file_text": "pwned"},
        {"command": "delete", "path": path},
        {"command": "rename", "old_path": "/memories/conventions/Rule.md", "new_path": path},
    ):
        out = await memory(src, **arguments)
        assert out.is_error, (path, arguments, out.text)
    assert src.revisions == []


async def test_str_replace_changes_the_one_occurrence_and_shows_the_lines():
    src = source()
    out = await memory(
        src,
        command="str_replace",
        path="/memories/conventions/Style.md",
        old_str="line two",
        new_str="line 2\nline 2b",
    )
    assert not out.is_error
    assert out.text.startswith("Edited /memories/conventions/Style.md (now version 4):\n")
    assert "     2\tline 2\n     3\tline 2b" in out.text
    assert body(src, "conventions", "Style") == "line one\nline 2\nline 2b\nline three"
    assert src.revisions[-1]["before"] == "line one\nline two\nline three"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (0, "top\nline one\nline two\nline three"),
        (1, "line one\ntop\nline two\nline three"),
        (3, "line one\nline two\nline three\ntop"),
    ],
)
async def test_insert_puts_text_after_the_line(line, expected):
    src = source()
    out = await memory(
        src,
        command="insert",
        path="/memories/conventions/Style.md",
        insert_line=line,
        insert_text="top\n",
    )
    assert not out.is_error, out.text
    assert body(src, "conventions", "Style") == expected


async def test_delete_and_rename():
    src = source()
    gone = await memory(src, command="delete", path="/memories/conventions/Style.md")
    assert gone.text == "Deleted /memories/conventions/Style.md."
    assert body(src, "conventions", "Style") is None
    moved = await memory(
        src,
        command="rename",
        old_path="/memories/conventions/Rule.md",
        new_path="/memories/conventions/Rules.md",
    )
    assert moved.text == "Renamed /memories/conventions/Rule.md to /memories/conventions/Rules.md."
    assert body(src, "conventions", "Rule") is None
    assert body(src, "conventions", "Rules") == "Never push to main."
    renamed = next(s for s in src.spaces if s.name == "conventions").note("Rules")
    assert renamed is not None and renamed.pinned


async def test_a_note_moves_between_write_spaces():
    src = source()
    src.spaces.append(space("scratch", mode="write", sid=3))
    out = await memory(
        src,
        command="rename",
        old_path="/memories/conventions/Style.md",
        new_path="/memories/scratch/Style.md",
    )
    assert not out.is_error, out.text
    assert body(src, "scratch", "Style") == "line one\nline two\nline three"
    assert body(src, "conventions", "Style") is None


class Racing(InMemorySource):
    """A teammate saves the note between the tool's read and its write."""

    def __init__(self, *, delete: bool = False) -> None:
        super().__init__(spaces=source().spaces)
        self.delete = delete

    async def selected(self, session_id):
        seen = await super().selected(session_id)
        if self.delete:
            self.put("conventions", "Style", None, by="a person")
        else:
            self.edit("conventions", "Style", "line one\nbob's line\nline three")
        return seen


async def test_a_teammates_edit_meanwhile_is_never_overwritten():
    src = Racing()
    out = await memory(
        src,
        command="str_replace",
        path="/memories/conventions/Style.md",
        old_str="line two",
        new_str="alice's line",
    )
    assert out.is_error
    assert out.text == (
        "/memories/conventions/Style.md changed while you were editing it: someone saved "
        "version 4 meanwhile. Nothing was written. View it again and redo your change on its "
        "current text."
    )
    assert body(src, "conventions", "Style") == "line one\nbob's line\nline three"
    assert [r["by"] for r in src.revisions] == ["a person"]


async def test_a_note_deleted_meanwhile_is_a_conflict_too():
    out = await memory(
        Racing(delete=True),
        command="insert",
        path="/memories/conventions/Style.md",
        insert_line=0,
        insert_text="x",
    )
    assert out.is_error and "was deleted while you were changing it" in out.text


async def test_without_a_memory_source_the_tool_says_so():
    out = await memory(None, command="view", path="/memories")
    assert out.is_error and "No memory spaces" in out.text


async def test_the_source_refuses_what_the_tool_would_too():
    src = source()
    with pytest.raises(Exception, match="read only"):
        await src.note_write(7, space="handbook", title="x", body="y", version=None, seq=1)
    with pytest.raises(Exception, match="already has a note"):
        await src.note_write(7, space="conventions", title="Style", body="y", version=None, seq=1)
