"""Compaction: when to fold, where to cut, and the summary request.

- **Trigger** (`Policy.trigger_tokens`): `trigger × W`, moved earlier by `compact_at` and by
  the headroom rule `prompt + max_output + summary_budget <= W`. No window, no trigger.
- **Cut** (`plan_cut`): walk back from the end keeping whole turns while the recent-history
  budget lasts; a turn too large for the budget alone is cut at a step (before an assistant
  entry). A cut never falls between a tool call and its result, because calls and results
  never start a turn or a step.
- **Fold** (`summary_request`): the current context, unchanged, plus one final instruction,
  so the request's prefix is the last model call's and hits the provider's prompt cache.
  That context holds the previous summary and nothing before the previous cut, so no span is
  summarised twice and the tenth compaction costs what the first did.
- **Clearing** (`clear_point`): the cheaper fallback, and the first resort with
  `clear_tool_results`: old tool outputs outside the recent budget become stubs.

Everything here is a pure function of values; the turn loop calls it and appends the
boundary entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from harness.context import Context, latest_boundary
from harness.messages import LogEntry, ModelRequest, UserMessage
from harness.state import prompt_tokens
from harness.tokens import estimate_tokens

TURN_STARTS = ("user", "answer", "timer", "subagent_result", "command")


@dataclass(frozen=True, kw_only=True)
class Policy:
    window: int | None
    max_output_tokens: int
    auto: bool = True
    trigger: float = 0.8
    compact_at: float | None = None
    recent_fraction: float = 0.2
    summary_fraction: float = 0.1
    clear_tool_results: bool = False

    @property
    def summary_budget(self) -> int:
        return int((self.window or 0) * self.summary_fraction)

    @property
    def recent_budget(self) -> int:
        return int((self.window or 0) * self.recent_fraction)

    @property
    def trigger_tokens(self) -> int | None:
        """The prompt size at which auto-compaction runs; None when it never does."""
        if self.window is None:
            return None
        tokens = self.trigger * self.window
        if self.compact_at is not None:
            at = self.compact_at * self.window if self.compact_at < 1 else self.compact_at
            tokens = min(tokens, at)
        headroom = self.window - self.max_output_tokens - self.summary_budget
        return max(1, int(min(tokens, headroom)))

    @property
    def armed(self) -> bool:
        return self.auto and self.window is not None

    def why_not(self) -> str | None:
        if self.window is None:
            return "the model card declares no context window"
        if not self.auto:
            return "auto-compaction is off for this session"
        return None


def next_prompt_tokens(context: Context, entries: Sequence[LogEntry]) -> int:
    """The size of the prompt about to be sent: the provider's count for the last call since
    the latest boundary plus estimates for what came after it, else the estimate."""
    boundary = latest_boundary(entries)
    since = boundary.seq if boundary else 0
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        if entry.seq <= since:
            break
        if entry.kind == "assistant":
            reported = prompt_tokens(entry.data)
            if reported is None:
                break
            added = sum(entry_tokens(e) for e in entries[index:])
            return max(reported + added, 0)
    return context.tokens


def entry_tokens(entry: LogEntry) -> int:
    return entry.tokens if entry.tokens is not None else estimate_tokens(entry.content)


def starts_turn(entry: LogEntry) -> bool:
    if entry.kind == "command":
        return bool(entry.data.get("expansion"))
    return entry.kind in TURN_STARTS


def plan_cut(entries: Sequence[LogEntry], budget: int) -> int | None:
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
        suffix += entry_tokens(entry)
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


def clear_point(entries: Sequence[LogEntry], budget: int, already: int) -> int | None:
    """Clear tool outputs before this seq (outside the recent budget), or None if none new."""
    suffix = 0
    point: int | None = None
    for entry in reversed(entries):
        suffix += entry_tokens(entry)
        if suffix > budget:
            point = entry.seq + 1
            break
    if point is None:
        return None
    olds = [e for e in entries if e.kind == "tool_result" and already <= e.seq < point]
    return point if olds else None


SUMMARY_RULES = """\
- Keep exact file paths, identifiers, names, numbers, commands, URLs and error messages.
- Keep the user's own instructions and preferences word for word, in quotes.
- Say what was decided and why, what was done, what failed and why, and what is still open.
- Do not repeat the task list, timers or pending questions: they are carried separately.
- Do not call tools. Reply with the summary only, in markdown, at most {budget} tokens."""

SUMMARY_INSTRUCTION = """\
[Compaction] Everything in this conversation before the message that begins
«{anchor}»
is about to leave your context. Write the session's running summary that replaces it.
{anchor_rule}
{rules}"""

ANCHOR_PREVIOUS = (
    "The current summary is the one at the top of this conversation: use it as your anchor. "
    "Keep its lines that are still true unchanged, update the ones that changed, and add "
    "what happened since, up to that message."
)
ANCHOR_FIRST = "There is no summary yet: summarise everything up to that message."


FORK_INSTRUCTION = """\
[Compaction] This whole conversation is about to be replaced by a summary: a new session
starts from it alone. Write that summary.
{anchor_rule}
{rules}"""

SPAN_INSTRUCTION = """\
[Compaction] Everything in this conversation is about to leave your context (the most
recent messages, which stay verbatim, are not shown here). Write the session's running
summary that replaces it.
{anchor_rule}
{rules}"""

HANDOFF_INSTRUCTION = """\
[Handoff] Write a handoff document for a colleague who continues this work in a new session
and will not see this conversation. Use these sections: Goal; Decisions (with the reasons);
Progress (done, and how it was checked); Next steps (in order); Pitfalls (what failed or
misled, and what to avoid). Keep exact file paths, identifiers, numbers, commands and the
user's own instructions word for word. Do not call tools. Reply with the document only, in
markdown, at most {budget} tokens.\
"""


def summary_request(
    context: Context,
    *,
    anchor: str | None,
    has_previous: bool,
    budget: int,
    instructions: str | None,
    max_output_tokens: int | None,
    span: bool = False,
) -> ModelRequest:
    """The context, unchanged, plus one instruction at the end.

    `anchor` is the start of the first entry kept verbatim; None summarises everything (a
    fork). `span` says the context holds only what is to be folded (`span_context`).
    """
    rule = ANCHOR_PREVIOUS if has_previous else ANCHOR_FIRST
    rules = SUMMARY_RULES.format(budget=budget)
    whole_rule = rule.replace(", up to that message", "")
    if span:
        text = SPAN_INSTRUCTION.format(anchor_rule=whole_rule, rules=rules)
    elif anchor is None:
        text = FORK_INSTRUCTION.format(anchor_rule=whole_rule, rules=rules)
    else:
        text = SUMMARY_INSTRUCTION.format(
            anchor=" ".join(anchor.split())[:160], anchor_rule=rule, rules=rules
        )
    if instructions:
        text += f"\nThe user asks of this summary: {instructions}"
    return instruction_request(context, text, budget, max_output_tokens)


def handoff_request(context: Context, budget: int, max_output_tokens: int | None) -> ModelRequest:
    return instruction_request(
        context, HANDOFF_INSTRUCTION.format(budget=budget), budget, max_output_tokens
    )


def instruction_request(
    context: Context, text: str, budget: int, max_output_tokens: int | None
) -> ModelRequest:
    limit = min(budget, max_output_tokens) if max_output_tokens else budget
    return ModelRequest(
        messages=(*context.messages, UserMessage(text=text)),
        tools=context.tools,
        max_output_tokens=max(limit, 64),
    )


# When the fold does not fit ------------------------------------------------------------

FIT = 1.0  # of the window; when the estimate runs low the provider says so and the span is sent
CUT_NOTE = "\n[… {n} characters left out of this summary request; the entry is whole in the log]\n"


def request_tokens(request: ModelRequest) -> int:
    """The estimated size of a request, with room for its output."""
    text = sum(estimate_tokens(getattr(m, "text", "")) for m in request.messages)
    tools = sum(
        estimate_tokens(t.description) + estimate_tokens(str(t.parameters)) for t in request.tools
    )
    return text + tools + (request.max_output_tokens or 0)


def fits(request: ModelRequest, window: int | None) -> bool:
    return window is None or request_tokens(request) <= FIT * window


def squeezed(request: ModelRequest, window: int) -> ModelRequest:
    """The request with its longest messages cut in the middle until it fits the window.

    Only for a fold that cannot fit otherwise: the summary then sees the head and tail of a
    huge message, and the whole of it stays in the log for `read_entry`.
    """
    shed = 0
    cut = request
    for _ in range(5):  # each cut adds a note: shed a little more until it fits
        over = request_tokens(cut) - int(FIT * window)
        if over <= 0:
            return cut
        shed += over * 4 + 200
        cut = cut_longest(request, shed)
    return cut


def cut_longest(request: ModelRequest, shed: int) -> ModelRequest:
    body = list(request.messages[1:-1])  # never the system prompt or the instruction
    lengths = [len(getattr(m, "text", "")) for m in body]
    low, high = 200, max(lengths, default=200)
    while low < high:  # the largest per-message cap that sheds `shed` characters
        cap = (low + high + 1) // 2
        if sum(max(0, n - cap) for n in lengths) >= shed:
            low = cap
        else:
            high = cap - 1
    out = [request.messages[0]]
    for message, n in zip(body, lengths, strict=True):
        text = getattr(message, "text", "")
        if n > low:
            half = low // 2
            text = text[:half] + CUT_NOTE.format(n=n - 2 * half) + text[n - half :]
            message = replace(message, text=text)
        out.append(message)
    out.append(request.messages[-1])
    return replace(request, messages=tuple(out))
