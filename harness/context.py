"""Context assembly: what the model is handed on each call, as a pure function of values.

The order is fixed so the provider's prompt-cache prefix stays stable from call to call:
the system block (the system prompt, then the tool list when the wire can carry tools, then
the skills index, one line per selected skill, then memory); then, when the session has
compacted, the latest boundary's summary, the durable state it carried, verbatim, and the
bodies of the skills it carried as loaded (within the skills budget, see `harness.skills`);
then the verbatim entries from the boundary's cut, in log order. Every
block is counted by the session's one `TokenCounter`, so the same value answers
`GET /context`, feeds the context meter, decides compaction and becomes the model request.

Nothing is ever too big to send: a tool output the boundary cleared is a stub that says how
to read it back, and an input or tool output larger than `entry_limit` tokens (or a tool
output over `preview_chars`) is shown as its head and tail plus the seq to read the rest,
and named in `Context.shortened`. A tool call is never separated from its result: a call
whose result is missing (a crash mid-tool) gets an error result, and a result whose call is
not in view is left out.
"""

from __future__ import annotations

import bisect
import json
import operator
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, assert_never

from harness.context_cache import Count, EntryCache, Fixed, Form
from harness.messages import (
    AssistantMessage,
    LogEntry,
    Message,
    ModelRequest,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from harness.skills import LOAD_SKILL, Skill, loaded_skills_text, skills_index
from harness.tokens import ESTIMATE, Estimate, TokenCounter, estimate_tokens

BlockKind = Literal["system", "skills", "memory", "summary", "state", "entry"]
MISSING_RESULT = "No result was recorded for this call (the turn was interrupted)."
PREVIEW_CHARS = 8_000
SUMMARY_HEADER = "[Summary of the session before this point, written at compaction]"
SHORTENED_KINDS = ("user", "answer", "tool_result", "subagent_result", "timer")
HEAD_SHARE = 0.7  # of a shortened entry's room: the head says what it is, the tail how it ends
STATE_HEADER = "[Durable state carried over at compaction, verbatim]"


@dataclass(frozen=True, kw_only=True)
class Block:
    kind: BlockKind
    role: str
    text: str
    tokens: int
    seq: int | None = None
    estimate: int = 0  # the raw chars/4 estimate, which calibration is measured against


class Blocks(Sequence[Block]):
    """A context's blocks: the fixed ones, then the entries'. An entry's block may come from an
    earlier call, counted under an earlier calibration of the estimate: under `counter` its
    count is its estimate scaled again, so a call that needs only the sums (every model call)
    reads no text, and the blocks themselves are made again only when looked at."""

    def __init__(
        self,
        fixed: Sequence[Block],
        entries: Sequence[Block],
        counter: TokenCounter,
        kept: Sums | None = None,
    ):
        self._fixed, self._entries, self._counter = fixed, entries, counter
        self._kept = kept  # the sums of the first `kept.count` entry blocks, from earlier calls
        self._made: tuple[Block, ...] | None = None
        self._tokens: int | None = None
        self._estimate: int | None = None  # both asked more than once a call

    def _all(self) -> tuple[Block, ...]:
        if self._made is None:
            self._made = (*self._fixed, *recounted(self._entries, self._counter))
        return self._made

    def __getitem__(self, index: Any) -> Any:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._fixed) + len(self._entries)

    def __iter__(self) -> Iterator[Block]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(self._all())

    def __repr__(self) -> str:
        return f"Blocks({self._all()!r})"

    @property
    def tokens(self) -> int:
        if self._tokens is None:
            counter = self._counter
            fixed = sum(block.tokens for block in self._fixed)
            if isinstance(counter, Estimate):
                kept = self._kept
                start, scaled = (kept.count, kept.scaled(counter)) if kept else (0, 0)
                scaled += counter.scaled_sum(map(RAW, self._entries[start:]))
                entries = scaled + counter.overhead * len(self._entries)
            else:
                entries = sum(block.tokens for block in self._entries)
            self._tokens = fixed + entries
        return self._tokens

    @property
    def estimate(self) -> int:
        if self._estimate is None:
            kept = self._kept
            start, raw = (kept.count, kept.raw()) if kept else (0, 0)
            rest = self._entries[start:]
            self._estimate = sum(map(RAW, self._fixed)) + raw + sum(map(RAW, rest))
        return self._estimate


class Sums:
    """The sums over a session's kept entry blocks (`Run`), worked out when first asked and
    from the previous run's sums where it has them: a call pays for its new blocks, not
    for every block in context again. `blocks` begins with `base`'s blocks."""

    def __init__(self, blocks: Sequence[Block], base: Sums | None) -> None:
        self.blocks, self.count, self.base = blocks, len(blocks), base
        if base is not None and base.base is not None:
            base.base.base = None  # only the last two runs' sums are ever read on from
        self._scaled: tuple[Estimate, int] | None = None
        self._raw: int | None = None

    def scaled(self, counter: Estimate) -> int:
        if self._scaled is None or self._scaled[0] != counter:
            base = self.base
            start, total = 0, 0
            if base is not None and base._scaled is not None and base._scaled[0] == counter:
                start, total = base.count, base._scaled[1]
            self._scaled = counter, total + counter.scaled_sum(map(RAW, self.blocks[start:]))
        return self._scaled[1]

    def raw(self) -> int:
        if self._raw is None:
            base = self.base
            start, total = (base.count, base._raw) if base and base._raw is not None else (0, 0)
            self._raw = total + sum(map(RAW, self.blocks[start:]))
        return self._raw


def recounted(blocks: Sequence[Block], counter: TokenCounter) -> list[Block]:
    """Entry blocks as `counter` counts them (only a calibration of the estimate differs)."""
    if not isinstance(counter, Estimate):
        return list(blocks)
    scale, overhead = counter.scaled, counter.overhead
    out = []
    for block in blocks:
        tokens = scale(block.estimate) + overhead
        if tokens != block.tokens:
            block = replace(block, tokens=tokens)
        out.append(block)
    return out


@dataclass(frozen=True, kw_only=True)
class Context:
    blocks: Blocks
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    shortened: tuple[int, ...] = ()  # seqs shown as head and tail
    skills_dropped: tuple[str, ...] = ()  # loaded skills the skills budget left out

    @property
    def tokens(self) -> int:
        return self.blocks.tokens

    @property
    def estimate(self) -> int:
        return self.blocks.estimate

    def request(self, max_output_tokens: int | None) -> ModelRequest:
        return ModelRequest(
            messages=self.messages, tools=self.tools, max_output_tokens=max_output_tokens
        )


def assemble(
    *,
    system_prompt: str,
    tools: Sequence[ToolSpec],
    entries: Sequence[LogEntry],
    counter: TokenCounter = ESTIMATE,
    entry_limit: int | None = None,
    preview_chars: int = PREVIEW_CHARS,
    memory: str = "",
    skills: Sequence[Skill] = (),
    skills_budget: int | None = None,
    cache: EntryCache | None = None,
) -> Context:
    """`entries` are the log from the latest cut on (plus the latest boundary, wherever it is).

    `memory` is the rendered memory block: part of the system message, after the prompt, so
    no fold ever summarises it and a teammate's edit reaches the next call. `skills` are the
    session's selected skills: their index joins the system message, and the bodies of those
    the latest boundary carried as loaded are attached after its state, within
    `skills_budget` tokens. With the session's `cache`, entries already shown on an earlier
    call cost a look-up (the result is the same, object for object)."""
    blocks: list[Block] = []
    messages: list[Message] = []
    index = skills_index(skills)
    if system_prompt:
        blocks.append(counted(counter, kind="system", role="system", text=system_prompt))
    if tools:
        blocks.append(counted(counter, kind="system", role="tools", text=tools_text(tools)))
    if index:
        blocks.append(counted(counter, kind="skills", role="system", text=index))
    if memory:
        blocks.append(counted(counter, kind="memory", role="system", text=memory))
    system = "\n\n".join(text for text in (system_prompt, index, memory) if text)
    if system:
        messages.append(fixed(cache, SystemMessage(text=system)))
    boundary = latest_boundary(entries)
    cut = int(boundary.data.get("first_kept_seq", 0)) if boundary else 0
    view = View(
        cleared_before=int(boundary.data.get("cleared_before", 0)) if boundary else 0,
        preview_chars=preview_chars,
        entry_limit=entry_limit,
        counter=counter,
    )
    visible = entries[
        bisect.bisect_left(entries, cut, key=operator.attrgetter("seq")) :
    ]  # in seq order
    dropped: tuple[str, ...] = ()
    if boundary is not None:
        after = boundary_blocks(boundary, counter)
        carried = boundary.data.get("carried") or {}
        loaded = [str(n) for n in carried.get("loaded_skills") or ()]
        if loaded:  # only then is it worth a walk over the entries
            shown = loads_in_view(visible, view.cleared_before)
            loaded = [name for name in loaded if name not in shown]
        if loaded:
            attached = loaded_skills_text(loaded, skills, counter, skills_budget)
            dropped = attached.dropped
            if attached.text:
                after.append(
                    counted(
                        counter, kind="skills", role="user", text=attached.text, seq=boundary.seq
                    )  # fmt: skip
                )
        for block in after:
            blocks.append(block)
            messages.append(fixed(cache, UserMessage(text=block.text)))
    head = len(messages)
    kept: Sums | None = None
    if cache is None:
        shortened: list[int] = []
        entry_blocks: list[Block] = []
        for entry, message in paired(entry_messages(visible, view, shortened)):
            messages.append(message)
            entry_blocks.append(entry_block(counter, entry, message, None))
    else:
        part = entries_part(visible, view, cache)
        messages += part.messages
        entry_blocks, shortened, kept = part.blocks, part.shortened, part.sums
        cache.keep_only(visible, messages[:head])
    return Context(
        blocks=Blocks(blocks, entry_blocks, counter, kept),
        messages=tuple(messages),
        tools=tuple(tools),
        shortened=tuple(shortened),
        skills_dropped=dropped,
    )


@dataclass(kw_only=True)
class Part:
    """The entries' share of a context: their messages and blocks, paired, and the seqs shown
    as head and tail. As a session's `Run`, the share of the entries up to a point after which
    no tool call is left open, which the next call reuses."""

    messages: list[Message]
    blocks: list[Block]
    shortened: list[int]
    sums: Sums | None = None  # of its first blocks: those of the run it went on from


@dataclass(kw_only=True)
class Run:
    """What the latest call made of its entries up to `len(entries)`, kept for the next call.

    The log only grows, so the next call's entries begin with these same objects
    (`sessions_app.selectors.KeptContext`) and only the rest is made. What it was made under
    must still hold: the same view, and a counter that shows every entry as it did. A new
    calibration only rescales the blocks' counts, unless an entry's form depends on its count
    (`limited`: one is over the entry limit) or the longest entry shown whole would now be."""

    key: tuple[int, int, int | None]
    counter: TokenCounter
    entries: list[LogEntry]
    part: Part
    longest: str  # the longest text shown whole (or only for `preview_chars`), to recount
    limited: bool
    sums: Sums | None = None  # of `part.blocks`


def entries_part(visible: Sequence[LogEntry], view: View, cache: EntryCache) -> Part:
    """`paired(entry_messages(…))` and their blocks, for the entries after the kept run."""
    key = (view.cleared_before, view.preview_chars, view.entry_limit)
    counter = view.counter
    run = cache.run if isinstance(cache.run, Run) else None
    if run is not None and not run_holds(run, key, counter, visible):
        run = None
    if run is None:
        start, longest, limited = 0, "", False
        part = Part(messages=[], blocks=[], shortened=[])
    else:
        start, longest, limited = len(run.entries), run.longest, run.limited
        kept = run.part
        part = Part(
            messages=list(kept.messages),
            blocks=list(kept.blocks),  # counted under an earlier calibration: see `Blocks`
            shortened=list(kept.shortened),
            sums=run.sums,
        )
    open_calls: dict[str, tuple[LogEntry, ToolCall]] = {}
    stable = (start, len(part.messages), len(part.shortened), longest, limited)

    def emit(entry: LogEntry, message: Message) -> None:
        part.messages.append(message)
        part.blocks.append(entry_block(counter, entry, message, cache))

    limit = view.entry_limit
    for index in range(start, len(visible)):
        entry = visible[index]
        message, short = cached_shown(cache, entry, view)
        if message is not None:
            if entry.kind in SHORTENED_KINDS:
                text = message_text(entry_message_kept(cache, entry))
                if limit is not None and counter.count(text) > limit:
                    limited = True
                elif len(text) > len(longest):
                    longest = text
            if short:
                part.shortened.append(entry.seq)
            if isinstance(message, ToolResultMessage):
                if open_calls.pop(message.call_id, None) is not None:
                    emit(entry, message)
            else:
                for closed in close_open_calls(open_calls):
                    emit(*closed)
                if isinstance(message, AssistantMessage):
                    open_calls = {call.id: (entry, call) for call in message.tool_calls}
                emit(entry, message)
        if not open_calls:
            stable = (index + 1, len(part.messages), len(part.shortened), longest, limited)
    upto, made, shown_short, longest, limited = stable
    blocks = part.blocks[:made]
    cache.run = Run(
        key=key,
        counter=counter,
        entries=list(visible[:upto]),
        part=Part(
            messages=part.messages[:made], blocks=blocks, shortened=part.shortened[:shown_short]
        ),
        longest=longest,
        limited=limited,
        sums=Sums(blocks, part.sums),
    )
    for closed in close_open_calls(open_calls):
        emit(*closed)
    return part


def run_holds(run: Run, key: Hashable, counter: TokenCounter, visible: Sequence[LogEntry]) -> bool:
    kept = run.entries
    if run.key != key or len(visible) < len(kept) or not kept:
        return False
    if not all(map(operator.is_, kept, visible)):
        return False
    if counter == run.counter:
        return True
    limit = run.key[2]
    return (
        isinstance(counter, Estimate)
        and isinstance(run.counter, Estimate)
        and counter.overhead == run.counter.overhead
        and not run.limited
        and (limit is None or counter.count(run.longest) <= limit)
    )


def entry_message_kept(cache: EntryCache, entry: LogEntry) -> Message:
    kept = cache.kept[entry.seq]
    assert kept.base is not None
    return kept.base


def loads_in_view(visible: Sequence[LogEntry], cleared_before: int) -> set[str]:
    """Skills whose `load_skill` result the model still reads whole in the verbatim entries."""
    return {
        str(e.data.get("skill"))
        for e in visible
        if e.kind == "tool_result"
        and e.data.get("name") == LOAD_SKILL
        and not e.data.get("is_error")
        and e.data.get("skill")
        and e.seq >= cleared_before
    }


def counted(counter: TokenCounter, *, kind: BlockKind, role: str, text: str,
            seq: int | None = None) -> Block:  # fmt: skip
    return Block(
        kind=kind,
        role=role,
        text=text,
        tokens=counter.count(text) + counter.overhead,
        seq=seq,
        estimate=estimate_tokens(text),
    )


@dataclass(frozen=True, kw_only=True)
class View:
    """How entries are shown: what the boundary cleared, and how large one may be."""

    cleared_before: int = 0
    preview_chars: int = PREVIEW_CHARS
    entry_limit: int | None = None
    counter: TokenCounter = ESTIMATE


def latest_boundary(entries: Sequence[LogEntry]) -> LogEntry | None:
    kinds = list(map(KIND, entries))  # at C speed: it runs on every call, over the context
    kinds.reverse()
    try:
        return entries[len(kinds) - 1 - kinds.index("boundary")]
    except ValueError:
        return None


KIND = operator.attrgetter("kind")
RAW = operator.attrgetter("estimate")  # a block's raw estimate


def boundary_blocks(boundary: LogEntry, counter: TokenCounter = ESTIMATE) -> list[Block]:
    blocks: list[Block] = []
    if boundary.content.strip():
        text = f"{SUMMARY_HEADER}\n{boundary.content}"
        blocks.append(counted(counter, kind="summary", role="user", text=text, seq=boundary.seq))
    carried = render_state(boundary.data.get("carried") or {})
    if carried:
        text = f"{STATE_HEADER}\n{carried}"
        blocks.append(counted(counter, kind="state", role="user", text=text, seq=boundary.seq))
    return blocks


def render_state(carried: Mapping[str, Any]) -> str:
    """The carried durable state as the model reads it; empty parts are left out."""
    lines: list[str] = []
    if carried.get("tasks"):
        lines.append("Task list:")
        lines += [f"- [{t['status']}] {t['text']}" for t in carried["tasks"]]
    if carried.get("timers"):
        lines.append("Armed timers:")
        lines += [f"- {t['id']} due {t['due_at']}: {t['message']}" for t in carried["timers"]]
    if carried.get("questions"):
        lines.append("Questions waiting for the user's answer:")
        for q in carried["questions"]:
            options = f" (options: {', '.join(q['options'])})" if q.get("options") else ""
            lines.append(f"- {q['id']}: {q['question']}{options}")
    if carried.get("subagents"):
        lines.append("Running subagents:")
        lines += [f"- {json.dumps(s, sort_keys=True)}" for s in carried["subagents"]]
    if carried.get("loaded_skills"):
        lines.append("Loaded skills: " + ", ".join(carried["loaded_skills"]))
    return "\n".join(lines)


def tools_text(tools: Sequence[ToolSpec]) -> str:
    """`json.dumps` of the specs as a list, from each spec's own JSON."""
    return "[" + ", ".join(spec.json for spec in tools) + "]"


def message_text(message: Message) -> str:
    if isinstance(message, AssistantMessage) and message.tool_calls:
        calls = "\n".join(f"→ {c.name}({c.arguments})" for c in message.tool_calls)
        return f"{message.text}\n{calls}".strip()
    return message.text


def entry_messages(
    entries: Sequence[LogEntry], view: View | None = None, shortened: list[int] | None = None
) -> list[tuple[LogEntry, Message]]:
    """The model-visible entries as messages, in log order; `shortened` collects the seqs
    shown as head and tail (with a session's cache, `entries_part` does this)."""
    view = view or View()
    out: list[tuple[LogEntry, Message]] = []
    for entry in entries:
        message, short = shown(entry, entry_message(entry), view)
        if message is None:
            continue
        if short and shortened is not None:
            shortened.append(entry.seq)
        out.append((entry, message))
    return out


def shown(entry: LogEntry, message: Message | None, view: View) -> tuple[Message | None, bool]:
    """The entry's message as the view shows it, and whether it is cut to head and tail."""
    if message is None:
        return None, False
    if isinstance(message, ToolResultMessage) and entry.seq < view.cleared_before:
        text = (
            f'[Output cleared to save context. read_entry {{"seq": {entry.seq}}} returns it whole.]'
        )
        return replace(message, text=text), False
    if entry.kind in SHORTENED_KINDS:
        short = fitted(message_text(message), entry, view)
        if short is not None:
            return replace(message, text=short), True
    return message, False


def cached_shown(cache: EntryCache, entry: LogEntry, view: View) -> tuple[Message | None, bool]:
    """`shown`, made again only when what decides it differs from the kept form's."""
    kept = cache.entry(entry, entry_message)
    base = kept.base
    key: Hashable = None
    if isinstance(base, ToolResultMessage) and entry.seq < view.cleared_before:
        key = "cleared"
    elif base is not None and entry.kind in SHORTENED_KINDS:
        limit = view.entry_limit
        tokens = view.counter.count(message_text(base)) if limit is not None else None
        key = (view.preview_chars, limit, tokens)
    form = kept.form
    if form is None or form.key != key:
        message, short = shown(entry, base, view)
        form = kept.form = Form(key=key, message=message, shortened=short)
    return form.message, form.shortened


def entry_block(
    counter: TokenCounter, entry: LogEntry, message: Message, cache: EntryCache | None
) -> Block:
    kept = cache.kept.get(entry.seq) if cache is not None else None
    if kept is None or kept.form is None or kept.form.message is not message:
        text = message_text(message)
        return counted(counter, kind="entry", role=message.kind, text=text, seq=entry.seq)
    count = kept.count
    if count is None or count.message is not message:
        text = message_text(message)
        block = counted(counter, kind="entry", role=message.kind, text=text, seq=entry.seq)
        count = kept.count = Count(message=message, counter=counter, block=block)
    elif count.counter != counter:  # recalibrated: the text and its estimate stand
        old = count.block
        tokens = counter.count(old.text) + counter.overhead
        block = Block(kind="entry", role=old.role, text=old.text, tokens=tokens, seq=old.seq,
                      estimate=old.estimate)  # fmt: skip
        count = kept.count = Count(message=message, counter=counter, block=block)
    block = count.block
    assert isinstance(block, Block)
    return block


def fixed(cache: EntryCache | None, message: Fixed) -> Fixed:
    """`message`, or the same one kept from an earlier call (the same object)."""
    return message if cache is None else cache.message(message)


def fitted(text: str, entry: LogEntry, view: View) -> str | None:
    """The head and tail of a text too large to show whole, or None when it fits."""
    chars = len(text)
    if entry.kind == "tool_result" and chars > view.preview_chars:
        chars = view.preview_chars
    limit = view.entry_limit
    if limit is not None:
        tokens = view.counter.count(text)
        if tokens > limit:
            chars = min(chars, int(len(text) * limit / tokens * 0.95))
    if chars >= len(text):
        return None
    return head_and_tail(text, entry.seq, max(chars - 160, chars // 2))


def head_and_tail(text: str, seq: int, room: int) -> str:
    head = int(room * HEAD_SHARE)
    tail = room - head
    left = len(text) - head - tail
    note = (
        f"\n[… {left} characters left out here: the entry is too large to show whole. "
        f'It is kept whole in the log: read_entry {{"seq": {seq}, "offset": {head}}} reads on.]\n'
    )
    return text[:head] + note + text[len(text) - tail :]


def entry_message(entry: LogEntry) -> Message | None:
    data = entry.data
    match entry.kind:
        case "user":
            return UserMessage(text=entry.content)
        case "answer":
            asked = data.get("asked")
            return UserMessage(
                text=f"[answer to: {asked}]\n{entry.content}" if asked else entry.content
            )
        case "command":
            expansion = data.get("expansion")
            return UserMessage(text=str(expansion)) if expansion else None
        case "assistant":
            return AssistantMessage(
                text=entry.content,
                tool_calls=tuple(ToolCall(**call) for call in data.get("tool_calls", ())),
                reasoning=data.get("reasoning"),
                provider_details=data.get("provider_details"),
            )
        case "tool_result":
            return ToolResultMessage(
                call_id=str(data.get("call_id", "")),
                name=str(data.get("name", "")),
                text=entry.content,
                is_error=bool(data.get("is_error", False)),
            )
        case "subagent_result":
            return UserMessage(text=f"[subagent {data.get('type', '')} result]\n{entry.content}")
        case "timer":
            return UserMessage(text=f"[timer {data.get('timer', '')} fired] {entry.content}")
        case "boundary" | "notice":
            return None
        case _:
            assert_never(entry.kind)


def paired(items: list[tuple[LogEntry, Message]]) -> list[tuple[LogEntry, Message]]:
    """Every tool call followed by exactly its results; orphans dropped, gaps filled."""
    out: list[tuple[LogEntry, Message]] = []
    open_calls: dict[str, tuple[LogEntry, ToolCall]] = {}
    for entry, message in items:
        if isinstance(message, ToolResultMessage):
            if open_calls.pop(message.call_id, None) is not None:
                out.append((entry, message))
            continue
        if open_calls:
            out.extend(close_open_calls(open_calls))
        if isinstance(message, AssistantMessage):
            open_calls = {call.id: (entry, call) for call in message.tool_calls}
        out.append((entry, message))
    out.extend(close_open_calls(open_calls))
    return out


def close_open_calls(
    open_calls: dict[str, tuple[LogEntry, ToolCall]],
) -> list[tuple[LogEntry, Message]]:
    closed: list[tuple[LogEntry, Message]] = [
        (
            entry,
            ToolResultMessage(call_id=call.id, name=call.name, text=MISSING_RESULT, is_error=True),
        )
        for entry, call in open_calls.values()
    ]
    open_calls.clear()
    return closed
