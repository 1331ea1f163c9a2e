"""API shapes (`XIn`/`XOut`) and the dicts the API and live events share."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal, Self

from ninja import Field, Schema
from pydantic import field_validator, model_validator

from harness.compaction.policy import Policy
from horsie_site.inputs import ID_MAX, SEQ_MAX, TOKENS_MAX, finite_or_none
from sessions_app.leases import status_of
from sessions_app.models import Entry, Session

Wire = Literal["openai_chat", "openai_responses", "anthropic", "local"]
ReplayRule = Literal["never", "tool_turns", "always"]
# Numbers a client sends are bounded by what the product means and both databases hold;
# `compact_at` below 1 is a fraction, else a token count, and never infinite or NaN.
Id = Annotated[int, Field(ge=1, le=ID_MAX)]
Seq = Annotated[int, Field(ge=1, le=SEQ_MAX)]
ContextWindow = Annotated[int, Field(ge=256, le=TOKENS_MAX)]
OutputTokens = Annotated[int, Field(ge=1, le=1_000_000)]
ThinkingBudget = Annotated[int, Field(ge=1024, le=1_000_000)]
CompactAt = Annotated[float, Field(gt=0, le=TOKENS_MAX, allow_inf_nan=False)]
MaxSteps = Annotated[int, Field(ge=1, le=1000)]


class Detail(Schema):
    detail: Any


class Patch(Schema):
    """A PATCH body: a field left out stays as it is; `null` only where the field may be null."""

    nullable: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="after")
    def nulls_allowed(self) -> Self:
        refused = sorted(
            name
            for name in self.model_fields_set
            if getattr(self, name) is None and name not in self.nullable
        )
        if refused:
            raise ValueError(f"{', '.join(refused)} may not be null; leave it out to keep it")
        return self


class MemorySelection(Schema):
    space: Id
    mode: Literal["read", "write"] = "read"


class Prices(Schema):
    """US dollars per million tokens."""

    input: float = Field(ge=0, le=1_000_000, allow_inf_nan=False)
    cached_input: float = Field(ge=0, le=1_000_000, allow_inf_nan=False)
    output: float = Field(ge=0, le=1_000_000, allow_inf_nan=False)


class ModelCardIn(Schema):
    name: str = Field(min_length=1, max_length=100)
    wire: Wire
    model: str = Field(min_length=1, max_length=200)
    base_url: str | None = Field(default=None, max_length=500)
    key: int | None = None
    api_key_env: str | None = Field(
        default=None, max_length=100, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$"
    )
    context_window: ContextWindow | None = None
    max_output_tokens: OutputTokens = 1024
    reasoning_replay: ReplayRule = "never"
    thinking_budget: ThinkingBudget | None = None
    prices: Prices | None = None
    team: str | None = None


class ModelCardPatch(Patch):
    nullable = frozenset(
        {"base_url", "key", "api_key_env", "context_window", "prices", "thinking_budget"}
    )
    name: str | None = Field(default=None, min_length=1, max_length=100)
    wire: Wire | None = None
    model: str | None = Field(default=None, min_length=1, max_length=200)
    base_url: str | None = Field(default=None, max_length=500)
    key: int | None = None
    api_key_env: str | None = Field(
        default=None, max_length=100, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$"
    )
    context_window: ContextWindow | None = None
    max_output_tokens: OutputTokens | None = None
    reasoning_replay: ReplayRule | None = None
    thinking_budget: ThinkingBudget | None = None
    prices: Prices | None = None


class ModelCardOut(Schema):
    id: int
    name: str
    wire: str
    model: str
    base_url: str | None
    key: int | None = Field(alias="key_id")
    api_key_env: str | None
    context_window: int | None
    max_output_tokens: int
    reasoning_replay: str
    thinking_budget: int | None
    prices: dict[str, float] | None
    team: str = Field(alias="team.name")
    endpoint_changed_by: str | None
    endpoint_changed_at: datetime | None

    @staticmethod
    def resolve_endpoint_changed_by(card: Any) -> str | None:
        changed_by = card.endpoint_changed_by
        return changed_by.username if changed_by is not None else None


class SelectionsIn(Schema):
    memory: list[MemorySelection] | None = None
    skills: list[Id] | None = None
    bundles: list[Id] | None = None
    subagent_types: list[Id] | None = None
    mcp_servers: list[Id] | None = None
    auto_compact: bool | None = None
    compact_at: CompactAt | None = None
    clear_tool_results: bool | None = None


class PresetIn(SelectionsIn):
    name: str = Field(min_length=1, max_length=100)
    model: Id | None = None
    system_prompt: str = Field(default="", max_length=100_000)
    max_steps: MaxSteps = 25
    team: str | None = None


class PresetPatch(SelectionsIn, Patch):
    nullable = frozenset({"model", "compact_at"})
    name: str | None = Field(default=None, min_length=1, max_length=100)
    model: Id | None = None
    system_prompt: str | None = Field(default=None, max_length=100_000)
    max_steps: MaxSteps | None = None


class PresetOut(Schema):
    id: int
    name: str
    model: int | None = Field(alias="model_id")
    system_prompt: str
    memory: list[Any]
    skills: list[int]
    bundles: list[int]
    subagent_types: list[int]
    mcp_servers: list[int]
    auto_compact: bool
    compact_at: float | None
    clear_tool_results: bool
    max_steps: int
    team: str = Field(alias="team.name")

    _finite = field_validator("compact_at")(finite_or_none)


class SessionIn(SelectionsIn):
    title: str = Field(default="", max_length=200)
    preset: Id | None = None
    model: Id | None = None
    system_prompt: str | None = Field(default=None, max_length=100_000)
    max_steps: MaxSteps | None = None
    team: str | None = None


class SessionPatch(SelectionsIn, Patch):
    nullable = frozenset({"compact_at"})
    title: str | None = Field(default=None, max_length=200)


class MessageIn(Schema):
    text: str


class CompletionOut(Schema):
    """A slash command the composer completes: built-in or the team's template."""

    name: str
    description: str
    usage: str


class ForkIn(Schema):
    document: str | None = Field(default=None, max_length=200_000)


class RewindIn(Schema):
    seq: Seq
    text: str | None = None


class SummaryEditIn(Schema):
    boundary: Seq
    summary: str = Field(max_length=200_000)
    pin: bool = True  # keep this text verbatim in later folds, until a person edits it again


class CompactIn(Schema):
    instructions: str | None = Field(default=None, max_length=10_000)


class AnswerIn(Schema):
    question: str = Field(min_length=1, max_length=40)
    text: str


class MessageOut(Schema):
    seq: int | None
    queued: bool


class EntriesOut(Schema):
    entries: list[dict[str, Any]]
    has_more: bool


def entry_out(entry: Entry, cut: int) -> dict[str, Any]:
    from sessions_app.selectors import is_in_context

    return {
        "seq": entry.seq,
        "kind": entry.kind,
        "content": entry.content,
        "data": entry.data,
        "tokens": entry.tokens,
        "author": entry.author.username if entry.author_id and entry.author else None,
        "created_at": entry.created_at.isoformat(),
        "in_context": is_in_context(entry, cut),
    }


def entries_out(
    session_id: int, *, after: int | None, before: int | None, limit: int
) -> tuple[list[dict[str, Any]], bool]:
    """A page of the log (`entries_page`) as the API shows it; the cut, which says what is
    in context, comes with the page's rows, in the same query."""
    from sessions_app.selectors import entries_page

    return page_out(*entries_page(session_id, after=after, before=before, limit=limit))


def entries_since_out(session_id: int, after: int) -> tuple[list[dict[str, Any]], bool]:
    """`entries_out` of the entries after `after` (`entries_since`)."""
    from sessions_app.selectors import entries_since

    return page_out(*entries_since(session_id, after))


def page_out(rows: list[Entry], has_more: bool) -> tuple[list[dict[str, Any]], bool]:
    from sessions_app.selectors import cut_or_first

    cut = cut_or_first(rows[0].cut) if rows else 1  # type: ignore[attr-defined]
    return [entry_out(row, cut) for row in rows], has_more


def session_out(
    session: Session,
    context: dict[str, Any],
    last_error: dict[str, Any] | None,
    usage: dict[str, Any],
) -> dict[str, Any]:
    return {
        "id": session.pk,
        "title": session.title,
        "kind": session.kind,
        "parent": session.parent_id,
        "parent_seq": session.parent_seq,
        "model": session.model_id,
        "preset": session.preset_id,
        "team": session.team.name,
        "status": status_of(session),
        "system_prompt": session.system_prompt,
        "max_steps": session.max_steps,
        "auto_compact": session.auto_compact,
        "compact_at": finite_or_none(session.compact_at),
        "clear_tool_results": session.clear_tool_results,
        "memory": session.memory,
        "skills": session.skills,
        "bundles": session.bundles,
        "subagent_types": session.subagent_types,
        "mcp_servers": session.mcp_servers,
        "context": context,
        "last_error": last_error,
        "usage": usage,
        "created_at": session.created_at.isoformat(),
        "updated_at": session.updated_at.isoformat(),
    }


def context_meter(policy: Policy, tokens: int | None, counted: str | None = None) -> dict[str, Any]:
    """The session's `context`: the next prompt's size, the card's window and what the
    server was found to accept, whether (and where) auto-compaction is armed or why it is
    not, and how the tokens were counted."""
    return {
        "tokens": tokens,
        "window": policy.declared_window or policy.window,
        "effective_window": policy.effective_window,
        "trigger_tokens": policy.trigger_tokens if policy.armed else None,
        "armed": policy.armed,
        "not_armed_because": policy.why_not(),
        "counted": counted,
    }


class BlockOut(Schema):
    kind: str
    seq: int | None
    role: str
    text: str
    tokens: int


class ContextOut(Schema):
    blocks: list[BlockOut]
    tokens: int
    window: int | None
    effective_window: int | None
    trigger_tokens: int | None
    armed: bool
    not_armed_because: str | None
    counted: str | None
    shortened: list[int]
    truncated: list[Any]


class StateOut(Schema):
    tasks: list[Any]
    timers: list[Any]
    questions: list[Any]
    subagents: list[Any]
    loaded_skills: list[Any]
    pending_compact: dict[str, Any] | None
    pending_handoff: int | None
    seq: int
    snapshot_seq: int | None
