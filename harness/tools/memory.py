"""`memory {"command", ...}`: Anthropic's memory-tool commands over the selected spaces.

Paths are `/memories` (the selected spaces), `/memories/<space name>` (its notes) and
`/memories/<space name>/<note title>.md` (one note; the `.md` is optional). Commands:
`view {path, view_range?}`, `create {path, file_text}`, `str_replace {path, old_str,
new_str}`, `insert {path, insert_line, insert_text}`, `delete {path}`, `rename {old_path,
new_path}`.

A path is a name, never a file: it is parsed into a space and a title and looked up among the
session's selected spaces, so `..`, `.`, empty names, control characters, paths outside
`/memories` and unknown spaces are refused before anything is read. Only spaces selected
`write` can change. `create` never overwrites: a note that exists is changed with
`str_replace` or `insert`, so a teammate's text is never replaced by a blind write. Every
edit is applied to the note as it is now and written with the version it was computed
from; when a teammate saved in between, nothing is written and the model is told to view
the note again. Each write names the session and the seq of the call's `assistant` entry
(`ToolContext.call_seq`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, assert_never

from pydantic import BaseModel, Field, RootModel

from harness.memory import (
    MAX_NOTE_CHARS,
    MAX_TITLE_CHARS,
    MemoryConflict,
    MemoryNote,
    MemoryRefused,
    MemorySource,
    MemorySpace,
    in_order,
)
from harness.tools.base import ToolContext, ToolOutcome, TypedTool, refused

ROOT = "/memories"
SNIPPET = 3  # lines of context shown around an edit
PathArg = Annotated[
    str,
    Field(
        min_length=1,
        max_length=1_000,
        description="/memories, /memories/<space>, or /memories/<space>/<title>.md",
    ),
]


class View(BaseModel):
    """list /memories or a space's notes, or read a note with line numbers"""

    command: Literal["view"]
    path: PathArg
    view_range: list[int] | None = Field(
        default=None,
        min_length=2,
        max_length=2,
        description="[first, last] line to read (from 1); last -1 reads to the end",
    )


class Create(BaseModel):
    """create a new note"""

    command: Literal["create"]
    path: PathArg
    file_text: str = Field(max_length=MAX_NOTE_CHARS, description="the new note's text")


class StrReplace(BaseModel):
    """replace text that occurs exactly once in a note"""

    command: Literal["str_replace"]
    path: PathArg
    old_str: str = Field(min_length=1, description="text that occurs exactly once in the note")
    new_str: str = Field(description="what replaces it (may be empty)")


class Insert(BaseModel):
    """insert text after a line (0: at the top)"""

    command: Literal["insert"]
    path: PathArg
    insert_line: int = Field(ge=0, description="the line to insert after; 0 for the top")
    insert_text: str


class Delete(BaseModel):
    """delete a note"""

    command: Literal["delete"]
    path: PathArg


class Rename(BaseModel):
    """rename a note or move it to another space"""

    command: Literal["rename"]
    old_path: PathArg
    new_path: PathArg


Command = View | Create | StrReplace | Insert | Delete | Rename


class MemoryArgs(RootModel[Annotated[Command, Field(discriminator="command")]]):
    pass


@dataclass(frozen=True)
class Where:
    """A parsed path: the root (no space), a space (no title), or a note."""

    space: MemorySpace | None = None
    title: str | None = None

    @property
    def path(self) -> str:
        if self.space is None:
            return ROOT
        return f"{ROOT}/{self.space.name}" + (f"/{self.title}.md" if self.title else "")

    @property
    def note(self) -> MemoryNote | None:
        return self.space.note(self.title) if self.space and self.title else None


class Refusal(Exception):
    """A path or an edit the model must fix; its message is the error result."""


class Memory(TypedTool[MemoryArgs]):
    name = "memory"
    description = (
        "Read and change the memory spaces selected for this session: notes kept across "
        "sessions and shared with your team, shown at the top of your context. Each note is "
        "the file /memories/<space>/<title>.md; view /memories to list the spaces. Only "
        "spaces selected read and write can change. Keep notes short and factual."
    )
    Args = MemoryArgs

    async def call(self, args: MemoryArgs, context: ToolContext) -> ToolOutcome:
        if context.memory is None:
            return refused("No memory spaces are selected in this session.")
        spaces = {s.name: s for s in await context.memory.selected(context.session_id)}
        edit = Edit(context.memory, context, spaces)
        try:
            return await edit.run(args.root)
        except Refusal as error:
            return refused(str(error))
        except MemoryRefused as error:
            return refused(error.message)
        except MemoryConflict as conflict:
            return refused(conflict_text(edit.target, conflict.current))


@dataclass
class Edit:
    """One call of the tool over the spaces as they were read for it."""

    source: MemorySource
    context: ToolContext
    spaces: Mapping[str, MemorySpace]
    target: str = ROOT  # the note a conflict is about

    @property
    def seq(self) -> int:
        call_seq = self.context.call_seq
        return call_seq if call_seq is not None else self.context.state.seq

    async def run(self, command: Command) -> ToolOutcome:
        match command:
            case View():
                return self.view(self.where(command.path), command.view_range)
            case Create():
                return await self.create(self.where(command.path), command.file_text)
            case StrReplace():
                return await self.replace(self.note_at(command.path), command)
            case Insert():
                return await self.insert(self.note_at(command.path), command)
            case Delete():
                return await self.delete(self.note_at(command.path))
            case Rename():
                return await self.rename(self.note_at(command.old_path), command.new_path)
            case _:
                assert_never(command)

    # Paths -------------------------------------------------------------------------------

    def where(self, path: str) -> Where:
        names = path_names(path)
        if not names:
            return Where()
        space = self.spaces.get(names[0])
        if space is None:
            raise Refusal(f"There is no selected memory space `{names[0]}`. {self.selection()}")
        return Where(space, names[1] if len(names) > 1 else None)

    def note_at(self, path: str) -> Where:
        where = self.where(path)
        if where.title is None:
            raise Refusal(f"{path} is not a note: give /memories/<space>/<title>.md.")
        if where.note is None:
            folder = where.path.rsplit("/", 1)[0]
            raise Refusal(f"There is no note {where.path}. View {folder} to list its notes.")
        self.target = where.path
        return where

    def writable(self, where: Where) -> MemorySpace:
        space = where.space
        assert space is not None
        if space.mode != "write":
            ours = ", ".join(f"`{s.name}`" for s in self.spaces.values() if s.mode == "write")
            raise Refusal(
                f"Space `{space.name}` is selected read only in this session: its notes "
                f"cannot change. Spaces you can write: {ours or 'none'}."
            )
        return space

    def selection(self) -> str:
        listed = ", ".join(f"`{s.name}` ({mode_text(s)})" for s in self.spaces.values())
        return f"Selected: {listed}." if listed else "No space is selected in this session."

    # Commands ----------------------------------------------------------------------------

    def view(self, where: Where, view_range: Sequence[int] | None) -> ToolOutcome:
        if where.space is None:
            return ToolOutcome(text=root_listing(list(self.spaces.values())))
        if where.title is None:
            return ToolOutcome(text=space_listing(where.space))
        note = where.note
        if note is None:
            raise Refusal(f"There is no note {where.path}. {space_listing(where.space)}")
        return ToolOutcome(text=note_view(where.path, note, view_range))

    async def create(self, where: Where, text: str) -> ToolOutcome:
        if where.title is None:
            raise Refusal("create needs a note path: /memories/<space>/<title>.md.")
        space = self.writable(where)
        if where.note is not None:
            raise Refusal(
                f"{where.path} already exists (version {where.note.version}). Change it with "
                "str_replace or insert after viewing it, or delete it first."
            )
        self.target = where.path
        note = await self.source.note_write(
            self.context.session_id,
            space=space.name,
            title=where.title,
            body=text,
            version=None,
            seq=self.seq,
        )
        return written(f"Created {where.path} (version {note.version}).", space, note)

    async def replace(self, where: Where, command: StrReplace) -> ToolOutcome:
        note = where.note
        assert note is not None
        self.writable(where)
        found = occurrences(note.body, command.old_str)
        if not found:
            raise Refusal(
                f"old_str does not occur in {where.path} verbatim (mind spaces and line "
                "breaks); nothing was changed. View the note again: it may have changed."
            )
        if len(found) > 1:
            lines = ", ".join(str(line) for line in found)
            raise Refusal(
                f"old_str occurs {len(found)} times in {where.path} (lines {lines}); nothing "
                "was changed. Include more of the surrounding text so it occurs once."
            )
        body = note.body.replace(command.old_str, command.new_str, 1)
        first = found[0]
        return await self.rewrite(where, body, first, first + command.new_str.count("\n"))

    async def insert(self, where: Where, command: Insert) -> ToolOutcome:
        note = where.note
        assert note is not None
        self.writable(where)
        lines = note.body.split("\n")
        if command.insert_line > len(lines):
            raise Refusal(
                f"insert_line {command.insert_line} is past the end of {where.path}: it has "
                f"{len(lines)} lines, so give 0 to {len(lines)}."
            )
        added = command.insert_text.removesuffix("\n").split("\n")
        at = command.insert_line
        body = "\n".join([*lines[:at], *added, *lines[at:]])
        return await self.rewrite(where, body, at + 1, at + len(added))

    async def rewrite(self, where: Where, body: str, first: int, last: int) -> ToolOutcome:
        space, note = self.writable(where), where.note
        assert note is not None and where.title is not None
        if len(body) > MAX_NOTE_CHARS:
            raise Refusal(too_large(where.path, len(body)))
        stored = await self.source.note_write(
            self.context.session_id,
            space=space.name,
            title=where.title,
            body=body,
            version=note.version,
            seq=self.seq,
        )
        text = f"Edited {where.path} (now version {stored.version}):\n"
        return written(text + numbered(stored.body, first - SNIPPET, last + SNIPPET), space, stored)

    async def delete(self, where: Where) -> ToolOutcome:
        space, note = self.writable(where), where.note
        assert note is not None and where.title is not None
        await self.source.note_delete(
            self.context.session_id,
            space=space.name,
            title=where.title,
            version=note.version,
            seq=self.seq,
        )
        return ToolOutcome(
            text=f"Deleted {where.path}.",
            data={"memory": {"space": space.name, "title": where.title, "deleted": True}},
        )

    async def rename(self, old: Where, new_path: str) -> ToolOutcome:
        new = self.where(new_path)
        if new.title is None:
            raise Refusal(f"rename needs a note path to move to: {new_path} is not one.")
        space, new_space, note = self.writable(old), self.writable(new), old.note
        assert note is not None and old.title is not None
        if new.note is not None:
            raise Refusal(f"{new.path} already exists; pick another title or delete it first.")
        moved = await self.source.note_rename(
            self.context.session_id,
            space=space.name,
            title=old.title,
            new_space=new_space.name,
            new_title=new.title,
            version=note.version,
            seq=self.seq,
        )
        return written(f"Renamed {old.path} to {new.path}.", new_space, moved)


# Pure helpers ----------------------------------------------------------------------------


def path_names(path: str) -> list[str]:
    """[] for /memories, [space] or [space, title]; a `Refusal` for anything else."""
    if any(unicodedata.category(c) == "Cc" for c in path) or "\\" in path:
        raise Refusal(f"{path!r} holds a control character or a backslash: not a memory path.")
    if path != ROOT and not path.startswith(ROOT + "/"):
        raise Refusal(
            f"{path!r} is outside /memories: memory paths are /memories/<space>/<title>.md."
        )
    names = path[len(ROOT) :].strip("/").split("/") if path.strip("/") != ROOT[1:] else []
    if any(name in ("..", ".") for name in names):
        raise Refusal(f"{path!r}: `.` and `..` are not allowed in a memory path.")
    if any(not name.strip() for name in names):
        raise Refusal(f"{path!r} has an empty name: memory paths are /memories/<space>/<title>.md.")
    if len(names) > 2:
        raise Refusal(f"{path!r} is too deep: notes are /memories/<space>/<title>.md, one level.")
    if len(names) == 2:
        names[1] = title_of(path, names[1])
    return names


def title_of(path: str, name: str) -> str:
    title = name.removesuffix(".md")
    if not title.strip() or title in (".", ".."):
        raise Refusal(f"{path!r}: a note needs a title, as in /memories/<space>/<title>.md.")
    if len(title) > MAX_TITLE_CHARS:
        raise Refusal(
            f"A note title is at most {MAX_TITLE_CHARS} characters; this one is {len(title)}."
        )
    return title


def occurrences(body: str, old: str) -> list[int]:
    """The line (from 1) where each occurrence of `old` starts."""
    lines, at = [], body.find(old)
    while at != -1:
        lines.append(body.count("\n", 0, at) + 1)
        at = body.find(old, at + 1)
    return lines


def numbered(body: str, first: int = 1, last: int = -1) -> str:
    lines = body.split("\n")
    first, last = max(first, 1), len(lines) if last == -1 else min(last, len(lines))
    return "\n".join(f"{n:6}\t{lines[n - 1]}" for n in range(first, last + 1))


def note_view(path: str, note: MemoryNote, view_range: Sequence[int] | None) -> str:
    count = len(note.body.split("\n"))
    first, last = view_range or (1, -1)
    if not 1 <= first <= count or not (last == -1 or first <= last <= count):
        raise Refusal(
            f"view_range {list(view_range or ())} is outside {path}, which has {count} lines: "
            f"give [first, last] with 1 <= first <= last <= {count}, or last -1."
        )
    end = count if last == -1 else last
    pinned = ", pinned (a hot rule)" if note.pinned else ""
    header = f"{path} (version {note.version}{pinned}), lines {first}-{end} of {count}:"
    return header + "\n" + numbered(note.body, first, end)


def root_listing(spaces: Sequence[MemorySpace]) -> str:
    if not spaces:
        return "No memory space is selected in this session."
    lines = [f"{ROOT}: the memory spaces selected for this session"]
    for space in spaces:
        about = f": {space.description.strip()}" if space.description.strip() else ""
        lines.append(f"- {ROOT}/{space.name} ({mode_text(space)}; {len(space.notes)} notes){about}")
    return "\n".join(lines)


def space_listing(space: MemorySpace) -> str:
    rules, others = in_order(space)
    lines = [f"{ROOT}/{space.name} ({mode_text(space)}): {len(space.notes)} notes"]
    for note in [*rules, *others]:
        pinned = "pinned, " if note.pinned else ""
        lines.append(
            f"- {ROOT}/{space.name}/{note.title}.md ({pinned}version {note.version}, "
            f"{len(note.body):,} characters, updated {note.updated_at:%Y-%m-%d %H:%M})"
        )
    return "\n".join(lines)


def mode_text(space: MemorySpace) -> str:
    return "read and write" if space.mode == "write" else "read only"


def too_large(path: str, size: int) -> str:
    return (
        f"{path} would be {size:,} characters; a note holds at most {MAX_NOTE_CHARS:,}. "
        "Nothing was changed: split it into several notes."
    )


def conflict_text(path: str, current: MemoryNote | None) -> str:
    if current is None:
        return f"{path} was deleted while you were changing it. Nothing was written."
    return (
        f"{path} changed while you were editing it: someone saved version {current.version} "
        "meanwhile. Nothing was written. View it again and redo your change on its current text."
    )


def written(text: str, space: MemorySpace, note: MemoryNote) -> ToolOutcome:
    data: dict[str, Any] = {
        "memory": {"space": space.name, "title": note.title, "version": note.version}
    }
    return ToolOutcome(text=text, data=data)
