"""Test doubles that ship with the core: a scripted provider and an in-memory store.

`ScriptedProvider` plays back a list of replies (or errors) and records every request it
receives, so a test can assert exactly what the model was sent. `MemoryStore` implements
`TranscriptStore` with a list, for pure tests of the turn loop without a database.
`InMemorySource` implements `MemorySource` over values, with the refusals and version checks
the database side makes, and records every write as a revision.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from harness.memory import (
    MAX_NOTE_CHARS,
    MemoryConflict,
    MemoryNote,
    MemoryRefused,
    MemorySpace,
)
from harness.messages import (
    EntryKind,
    LogEntry,
    ModelRequest,
    ModelResponse,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolCall,
    Usage,
    UserMessage,
)
from harness.providers.base import Capabilities, ProviderError
from harness.skills import Skill
from harness.state import SessionState, fold
from harness.tokens import ESTIMATE


@dataclass(frozen=True, kw_only=True)
class Reply:
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    chunks: int = 3


Step = Reply | ProviderError


def reply(text: str = "", *calls: tuple[str, str, str], usage: Usage | None = None) -> Reply:
    """A scripted reply; each call is (id, name, arguments JSON)."""
    return Reply(
        text=text,
        tool_calls=tuple(ToolCall(id=i, name=n, arguments=a) for i, n, a in calls),
        usage=usage,
    )


class ScriptedProvider:
    """Plays back `steps` in order; when they run out, repeats `default` (or fails)."""

    def __init__(
        self,
        steps: Sequence[Step] = (),
        *,
        default: Reply | None = None,
        gate: asyncio.Event | None = None,
    ) -> None:
        self.steps = list(steps)
        self.default = default
        self.gate = gate
        self.requests: list[ModelRequest] = []
        self.capabilities = Capabilities(tools=True, streaming_usage=True)
        self.counter = ESTIMATE

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        step = self.next_step()
        if isinstance(step, ProviderError):
            raise step
        for piece in split(step.text, step.chunks):
            yield TextDelta(text=piece)
            if self.gate is not None:
                await self.gate.wait()
        usage = step.usage or Usage(input_tokens=prompt_size(request), output_tokens=len(step.text))
        yield ResponseDone(
            response=ModelResponse(text=step.text, tool_calls=step.tool_calls, usage=usage)
        )

    def next_step(self) -> Step:
        if self.steps:
            return self.steps.pop(0)
        if self.default is not None:
            return self.default
        raise ProviderError("the script has no more replies", code="server_error")


def split(text: str, chunks: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // max(1, chunks)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def prompt_size(request: ModelRequest, density: float = 1.0) -> int:
    """The prompt's size as a provider would report it: messages and tool definitions.

    `density` makes a tokenizer that many times denser than four characters a token (3 for
    numbers, code and CJK text on many models; 0.5 for a very coarse one); each message also
    costs the role markers a chat template adds, which Horsie's estimate knows nothing of.
    """
    tools = sum(len(t.name) + len(t.description) + len(str(t.parameters)) for t in request.tools)
    chars = sum(len(getattr(m, "text", "").encode()) for m in request.messages) + tools
    return int(chars * density / 4) + 7 * len(request.messages)


@dataclass
class MemoryStore:
    """A `TranscriptStore` over a list; `queued` holds inputs waiting for a turn boundary."""

    entries: list[LogEntry] = field(default_factory=list)
    queued: list[str] = field(default_factory=list)

    async def context_entries(self, session_id: int) -> Sequence[LogEntry]:
        """As the database store: the latest boundary, and the entries from its cut on."""
        boundary = next((e for e in reversed(self.entries) if e.kind == "boundary"), None)
        cut = int(boundary.data.get("first_kept_seq", 1)) if boundary else 1
        return [
            e
            for e in self.entries
            if e is boundary or (e.seq >= cut and e.kind not in ("notice", "boundary"))
        ]

    async def append(
        self,
        session_id: int,
        *,
        kind: EntryKind,
        content: str = "",
        data: Mapping[str, Any] | None = None,
        tokens: int | None = None,
    ) -> LogEntry:
        entry = LogEntry(
            seq=len(self.entries) + 1,
            kind=kind,
            content=content,
            data=dict(data or {}),
            tokens=tokens,
        )
        self.entries.append(entry)
        return entry

    async def next_turn(self, session_id: int) -> bool:
        if not self.queued:
            return False
        for text in self.queued:
            await self.append(session_id, kind="user", content=text)
        self.queued.clear()
        return True

    async def keep_alive(self, session_id: int) -> None:
        return None

    async def state(self, session_id: int) -> SessionState:
        return fold(self.entries)

    async def search(self, session_id: int, query: str, limit: int) -> Sequence[LogEntry]:
        found = [e for e in reversed(self.entries) if query.lower() in e.content.lower()]
        return found[:limit]

    async def read(self, session_id: int, seq: int) -> LogEntry | None:
        return next((e for e in self.entries if e.seq == seq), None)


@dataclass
class RecordingEvents:
    deltas: list[str] = field(default_factory=list)
    streams: int = 0
    streaming: bool = False
    compactions: list[str] = field(default_factory=list)

    async def stream_start(self, session_id: int) -> None:
        self.streams += 1
        self.streaming = True

    async def delta(self, session_id: int, text: str) -> None:
        assert self.streaming, "a delta outside a stream"
        self.deltas.append(text)

    async def stream_end(self, session_id: int) -> None:
        self.streaming = False

    async def compacting(self, session_id: int, phase: str) -> None:
        self.compactions.append(phase)


CONTEXT_ERROR = (  # OpenAI's words, which vLLM uses too
    "This model's maximum context length is {limit} tokens. However, you requested {asked} "
    "tokens ({prompt} in the messages, {output} in the completion). Please reduce the length "
    "of the messages or completion."
)


class Archivist:
    """A model for compaction tests and benches: long replies (a `todo_write` call when the
    input says "tool please"), and for a compaction request a summary that keeps every line
    word of its input holding "MARKER". It reports usage as `prompt_size` of each request at
    its `density`, and with a `limit` refuses a request whose prompt and output cap exceed
    it, as a real server does."""

    def __init__(
        self, *, fail_summaries: bool = False, density: float = 1.0, limit: int | None = None
    ) -> None:
        self.capabilities = Capabilities(tools=True, streaming_usage=True)
        self.counter = ESTIMATE
        self.requests: list[ModelRequest] = []
        self.turn_requests: list[ModelRequest] = []
        self.summary_requests: list[ModelRequest] = []
        self.refused: list[ModelRequest] = []
        self.fail_summaries = fail_summaries
        self.density = density
        self.limit = limit
        self.calls = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        last = request.messages[-1]
        prompt = prompt_size(request, self.density)
        output = request.max_output_tokens or 0
        if self.limit is not None and prompt + output > self.limit:
            self.refused.append(request)
            message = CONTEXT_ERROR.format(
                limit=self.limit, asked=prompt + output, prompt=prompt, output=output
            )
            raise ProviderError(message, code="context_length_exceeded")
        usage = Usage(input_tokens=prompt, output_tokens=50)
        if isinstance(last, UserMessage) and last.text.startswith("[Compaction]"):
            self.summary_requests.append(request)
            if self.fail_summaries:
                raise ProviderError("quota exceeded", code="rate_limited")
            yield ResponseDone(response=ModelResponse(text=self.summary(request), usage=usage))
            return
        self.turn_requests.append(request)
        self.calls += 1
        if isinstance(last, UserMessage) and "tool please" in last.text:
            call = ToolCall(
                id=f"call{self.calls}",
                name="todo_write",
                arguments=json.dumps({"tasks": [{"text": "keep going", "status": "pending"}]}),
            )
            yield ResponseDone(response=ModelResponse(text="", tool_calls=(call,), usage=usage))
            return
        text = f"Reply {self.calls}. " + "lorem ipsum dolor sit amet " * 25
        yield TextDelta(text=text)
        yield ResponseDone(response=ModelResponse(text=text, usage=usage))

    @staticmethod
    def summary(request: ModelRequest) -> str:
        """Every MARKER word it was sent outside the system message, once, within the
        request's output cap."""
        words: list[str] = []
        for message in request.messages[:-1]:
            if message.kind == "system":  # the instruction says memory stays in context
                continue
            for word in getattr(message, "text", "").split():
                if "MARKER" in word and word not in words:
                    words.append(word)
        text = "Kept: " + " ".join(words) if words else "Nothing to keep."
        return text[: (request.max_output_tokens or 10**6) * 2]


@dataclass
class InMemorySource:
    """A `MemorySource` over a list of spaces, which every session has selected as given.

    `revisions` records each write (who: session and seq, or a person through `edit`), as the
    database's `MemoryRevision` rows would; `clock` moves a minute per write so "newest
    first" is deterministic.
    """

    spaces: list[MemorySpace]
    revisions: list[dict[str, Any]] = field(default_factory=list)
    clock: datetime = field(default_factory=lambda: datetime(2025, 1, 1, tzinfo=UTC))

    async def selected(self, session_id: int) -> Sequence[MemorySpace]:
        return list(self.spaces)

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
        current = self.current(self.writable(space), title, version)
        if len(body) > MAX_NOTE_CHARS:
            raise MemoryRefused(f"A note holds at most {MAX_NOTE_CHARS:,} characters.")
        note = self.stored(title, body, current, pinned=bool(current and current.pinned))
        self.put(space, title, note, by=f"session {session_id} at seq {seq}")
        return note

    async def note_delete(
        self, session_id: int, *, space: str, title: str, version: int, seq: int
    ) -> None:
        self.current(self.writable(space), title, version)
        self.put(space, title, None, by=f"session {session_id} at seq {seq}")

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
        current = self.current(self.writable(space), title, version)
        assert current is not None
        if self.writable(new_space).note(new_title) is not None:
            raise MemoryRefused(f"Space `{new_space}` already has a note `{new_title}`.")
        by = f"session {session_id} at seq {seq}"
        self.put(space, title, None, by=by)
        moved = self.stored(new_title, current.body, current, pinned=current.pinned)
        self.put(new_space, new_title, moved, by=by)
        return moved

    def edit(self, space: str, title: str, body: str, *, pinned: bool = False) -> MemoryNote:
        """A person's edit through the forms: no selection or version needed."""
        named = next(s for s in self.spaces if s.name == space)
        note = self.stored(title, body, named.note(title), pinned=pinned)
        self.put(space, title, note, by="a person")
        return note

    def writable(self, name: str) -> MemorySpace:
        space = next((s for s in self.spaces if s.name == name), None)
        if space is None:
            raise MemoryRefused(f"No memory space `{name}` is selected in this session.")
        if space.mode != "write":
            raise MemoryRefused(f"Space `{name}` is selected read only in this session.")
        return space

    def current(self, space: MemorySpace, title: str, version: int | None) -> MemoryNote | None:
        note = space.note(title)
        if version is None and note is not None:
            raise MemoryRefused(f"Space `{space.name}` already has a note `{title}`.")
        if version is not None and (note is None or note.version != version):
            raise MemoryConflict(note)
        return note

    def stored(
        self, title: str, body: str, before: MemoryNote | None, *, pinned: bool
    ) -> MemoryNote:
        self.clock += timedelta(minutes=1)
        version = before.version + 1 if before else 1
        return MemoryNote(
            title=title, body=body, pinned=pinned, version=version, updated_at=self.clock
        )

    def put(self, space: str, title: str, note: MemoryNote | None, *, by: str) -> None:
        named = next(s for s in self.spaces if s.name == space)
        before = named.note(title)
        notes = tuple(n for n in named.notes if n.title != title) + ((note,) if note else ())
        self.spaces = [replace(s, notes=notes) if s is named else s for s in self.spaces]
        self.revisions.append(
            {
                "space": space,
                "title": title,
                "before": before.body if before else None,
                "after": note.body if note else None,
                "by": by,
            }
        )


@dataclass
class InMemorySkills:
    """A `SkillSource` over a list of skills, which every session has selected as given."""

    skills: list[Skill]

    async def selected(self, session_id: int) -> Sequence[Skill]:
        return list(self.skills)
