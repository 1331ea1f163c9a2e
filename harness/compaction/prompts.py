"""The summary request, and how it is made to fit.

- **Fold** (`summary_request`): the current context, unchanged, plus one final instruction,
  so the request's prefix is the last model call's and hits the provider's prompt cache.
  That context holds the previous summary and nothing before the previous cut, so no span is
  summarised twice and the tenth compaction costs what the first did. A person's edit of the
  summary (`pinned`) is kept verbatim: the summariser writes only the rest.
- **Fit** (`fits`, `squeezed`): measured by the session's counter; a request that cannot fit
  its window has its longest messages cut in the middle, never the system prompt or the
  instruction.
"""

from __future__ import annotations

from dataclasses import replace

from harness.context import Context, tools_text
from harness.messages import ModelRequest, UserMessage
from harness.tokens import ESTIMATE, TokenCounter

SUMMARY_RULES = """\
- Keep exact file paths, identifiers, names, numbers, commands, URLs and error messages.
- Keep the user's own instructions and preferences word for word, in quotes.
- Say what was decided and why, what was done, what failed and why, and what is still open.
- Do not repeat the task list, timers, pending questions or memory notes: they stay in context.
- Do not call tools. Reply with the summary only, in markdown, at most {budget} tokens."""

PINNED_RULE = """\
The current summary opens with a person's text, from «{start}» to «{end}». It is kept word for
word above whatever you write: do not repeat or rephrase it; write only what it does not say."""

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
    pinned: str | None = None,
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
    if pinned:
        flat = " ".join(pinned.split())
        text += "\n" + PINNED_RULE.format(start=flat[:80], end=flat[-80:])
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

FIT = 0.95  # of the window: a calibrated count is close, not exact; a server that disagrees says so
CUT_NOTE = "\n[… {n} characters left out of this summary request; the entry is whole in the log]\n"


def request_tokens(request: ModelRequest, counter: TokenCounter = ESTIMATE) -> int:
    """A request's size in the counter's tokens, with room for its output."""
    text = sum(counter.count(getattr(m, "text", "")) + counter.overhead for m in request.messages)
    tools = counter.count(tools_text(request.tools)) if request.tools else 0
    return text + tools + (request.max_output_tokens or 0)


def fits(request: ModelRequest, window: int | None, counter: TokenCounter = ESTIMATE) -> bool:
    return window is None or request_tokens(request, counter) <= FIT * window


def squeezed(request: ModelRequest, window: int, counter: TokenCounter = ESTIMATE) -> ModelRequest:
    """The request with its longest messages cut in the middle until it fits the window.

    Only for a fold that cannot fit otherwise: the summary then sees the head and tail of a
    huge message, and the whole of it stays in the log for `read_entry`.
    """
    chars = sum(len(getattr(m, "text", "")) for m in request.messages)
    per_token = chars / max(1, request_tokens(request, counter) - (request.max_output_tokens or 0))
    shed = 0
    cut = request
    for _ in range(6):  # each cut adds a note: shed a little more until it fits
        over = request_tokens(cut, counter) - int(FIT * window)
        if over <= 0:
            return cut
        shed += int(over * per_token * 1.1) + 200
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
