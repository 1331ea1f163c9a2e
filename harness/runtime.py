"""What a runner holds for one session, and the one context builder.

`session_context` is the only way a context is built: the turn loop, compaction, handoffs,
forks, `GET /context`, the context view and the meter all call it, so they all show the same
blocks and the same number. It honours the wire's capabilities (a wire that cannot carry
tools is offered none, and none are counted), applies the window the server was found to
accept, counts with the wire's counter calibrated by the session's state, and renders the
selected skills (one line each, and the bodies a boundary carried as loaded) and memory
spaces (both re-read on every call) within their budgets.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from harness.compaction.policy import Policy
from harness.context import Context, assemble
from harness.context_cache import EntryCache, entry_cache
from harness.memory import MemoryBlock, MemorySource, MemorySpace, render_memory
from harness.messages import LogEntry, ToolSpec
from harness.ports import EventSink, TranscriptStore
from harness.providers.base import Capabilities, Provider
from harness.skills import Skill, SkillSource
from harness.state import SessionState
from harness.subagents import SubagentLauncher, SubagentLimits
from harness.tokens import TokenCounter
from harness.tools.base import Tool


@dataclass(frozen=True, kw_only=True)
class TurnConfig:
    session_id: int
    system_prompt: str
    max_steps: int
    max_output_tokens: int | None
    model: str
    policy: Policy | None = None
    subagent_limits: SubagentLimits = field(default_factory=SubagentLimits)


@dataclass(frozen=True, kw_only=True)
class Deps:
    store: TranscriptStore
    events: EventSink
    provider: Provider
    tools: Mapping[str, Tool]
    memory: MemorySource | None = None
    skills: SkillSource | None = None
    subagents: SubagentLauncher | None = None


@dataclass(frozen=True, kw_only=True)
class SessionView:
    """Everything a decision about the next call is made from, read once."""

    context: Context
    entries: Sequence[LogEntry]
    state: SessionState
    policy: Policy
    counter: TokenCounter
    memory: MemoryBlock
    skills: Sequence[Skill] = ()


def session_context(
    *,
    system_prompt: str,
    tools: Sequence[ToolSpec],
    capabilities: Capabilities,
    entries: Sequence[LogEntry],
    state: SessionState,
    counter: TokenCounter,
    policy: Policy,
    memory: Sequence[MemorySpace] = (),
    skills: Sequence[Skill] = (),
    cache: EntryCache | None = None,
) -> SessionView:
    policy = policy.within(state.effective_window)
    counter = counter.calibrated(state.calibration, state.calibrated_on)
    block = render_memory(memory, counter)
    with cache.lock if cache is not None else contextlib.nullcontext():
        context = assemble(
            system_prompt=system_prompt,
            tools=tools if capabilities.tools else (),
            entries=entries,
            counter=counter,
            entry_limit=policy.entry_limit,
            memory=block.text,
            skills=skills,
            skills_budget=policy.skills_budget,
            cache=cache,
        )
    return SessionView(
        context=context,
        entries=entries,
        state=state,
        policy=policy,
        counter=counter,
        memory=block,
        skills=skills,
    )


def policy_of(config: TurnConfig) -> Policy:
    return config.policy or Policy(window=None, max_output_tokens=config.max_output_tokens or 0)


@dataclass(frozen=True, kw_only=True)
class ViewReads:
    entries: Sequence[LogEntry]
    state: SessionState
    memory: Sequence[MemorySpace] = ()
    skills: Sequence[Skill] = ()


@runtime_checkable
class ReadsAtOnce(Protocol):
    """A store that reads what a view needs in one trip (the ORM's: one hop to a database
    thread, not four), asking `memory` and `skills` itself when it knows them; with `renew`,
    the lease is renewed in the same trip (`LeaseLost` when it is someone else's)."""

    async def view_reads(
        self,
        session_id: int,
        memory: MemorySource | None,
        skills: SkillSource | None,
        renew: bool = False,
    ) -> ViewReads | None: ...


async def view_reads(config: TurnConfig, deps: Deps, renew: bool = False) -> ViewReads:
    session_id = config.session_id
    if isinstance(deps.store, ReadsAtOnce):
        reads = await deps.store.view_reads(session_id, deps.memory, deps.skills, renew)
        if reads is not None:
            return reads
    if renew:
        await deps.store.keep_alive(session_id)
    return ViewReads(
        entries=await deps.store.context_entries(session_id),
        state=await deps.store.state(session_id),
        memory=await deps.memory.selected(session_id) if deps.memory else (),
        skills=await deps.skills.selected(session_id) if deps.skills else (),
    )


async def read_view(
    config: TurnConfig, deps: Deps, state: SessionState | None = None, *, renew: bool = False
) -> SessionView:
    """The session as the next model call would see it, from the store (with `state` in
    place of the stored one when given); the entries shown on the session's earlier calls
    are reused (`harness.context_cache`). With `renew`, the lease is renewed first (in the
    same database trip where the store can)."""
    reads = await view_reads(config, deps, renew)
    return session_context(
        system_prompt=config.system_prompt,
        tools=[tool.spec for tool in deps.tools.values()],
        capabilities=deps.provider.capabilities,
        entries=reads.entries,
        state=state or reads.state,
        counter=deps.provider.counter,
        policy=policy_of(config),
        memory=reads.memory,
        skills=reads.skills,
        cache=entry_cache(config.session_id),
    )
