"""API shapes (`XIn`/`XOut`) and the dicts the API and live events share."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema

from harness.compaction.policy import Policy
from sessions_app.leases import status_of
from sessions_app.models import Entry, Session

Wire = Literal["openai_chat", "openai_responses", "anthropic", "local"]
ReplayRule = Literal["never", "tool_turns", "always"]


class Detail(Schema):
    detail: Any


class MemorySelection(Schema):
    space: int
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
    context_window: int | None = Field(default=None, ge=256)
    max_output_tokens: int = Field(default=1024, ge=1, le=1_000_000)
    reasoning_replay: ReplayRule = "never"
    prices: Prices | None = None
    team: str | None = None


class ModelCardPatch(Schema):
    name: str | None = Field(default=None, min_length=1, max_length=100)
    wire: Wire | None = None
    model: str | None = Field(default=None, min_length=1, max_length=200)
    base_url: str | None = Field(default=None, max_length=500)
    key: int | None = None
    api_key_env: str | None = Field(
        default=None, max_length=100, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$"
    )
    context_window: int | None = Field(default=None, ge=256)
    max_output_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    reasoning_replay: ReplayRule | None = None
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
    skills: list[int] | None = None
    bundles: list[int] | None = None
    subagent_types: list[int] | None = None
    mcp_servers: list[int] | None = None
    auto_compact: bool | None = None
    compact_at: float | None = Field(default=None, gt=0)
    clear_tool_results: bool | None = None


class PresetIn(SelectionsIn):
    name: str = Field(min_length=1, max_length=100)
    model: int | None = None
    system_prompt: str = Field(default="", max_length=100_000)
    max_steps: int = Field(default=25, ge=1, le=1000)
    team: str | None = None


class PresetPatch(SelectionsIn):
    name: str | None = Field(default=None, min_length=1, max_length=100)
    model: int | None = None
    system_prompt: str | None = Field(default=None, max_length=100_000)
    max_steps: int | None = Field(default=None, ge=1, le=1000)


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


class SessionIn(SelectionsIn):
    title: str = Field(default="", max_length=200)
    preset: int | None = None
    model: int | None = None
    system_prompt: str | None = Field(default=None, max_length=100_000)
    max_steps: int | None = Field(default=None, ge=1, le=1000)
    team: str | None = None


class SessionPatch(SelectionsIn):
    title: str | None = Field(default=None, max_length=200)


class MessageIn(Schema):
    text: str


class ForkIn(Schema):
    document: str | None = Field(default=None, max_length=200_000)


class RewindIn(Schema):
    seq: int = Field(ge=1)
    text: str | None = None


class SummaryEditIn(Schema):
    boundary: int = Field(ge=1)
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


def session_out(
    session: Session, context: dict[str, Any], last_error: dict[str, Any] | None
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
        "compact_at": session.compact_at,
        "clear_tool_results": session.clear_tool_results,
        "memory": session.memory,
        "skills": session.skills,
        "bundles": session.bundles,
        "subagent_types": session.subagent_types,
        "mcp_servers": session.mcp_servers,
        "context": context,
        "last_error": last_error,
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
