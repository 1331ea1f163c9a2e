"""Durable state as a fold of the log.

The session's state is never stored beside the log as a second truth: it is what folding
the entries gives. Tools that change state (`todo_write` first) are folded from the call the
model made, applied only once its result came back without error, so a call that failed or
never finished changes nothing. The serialised form carries `version`; every older version
must gain an upgrade step in `UPGRADES`, and tests load a stored example of each.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from harness.messages import LogEntry

VERSION = 1


@dataclass(frozen=True, kw_only=True)
class Task:
    text: str
    status: str


@dataclass(frozen=True, kw_only=True)
class SessionState:
    tasks: tuple[Task, ...] = ()
    timers: tuple[Mapping[str, Any], ...] = ()
    questions: tuple[Mapping[str, Any], ...] = ()
    subagents: tuple[Mapping[str, Any], ...] = ()
    loaded_skills: tuple[str, ...] = ()
    last_prompt_tokens: int | None = None
    open_calls: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    seq: int = 0


Applier = Callable[[SessionState, Mapping[str, Any]], SessionState]


def apply_todo_write(state: SessionState, arguments: Mapping[str, Any]) -> SessionState:
    tasks = tuple(Task(text=str(t["text"]), status=str(t["status"])) for t in arguments["tasks"])
    return replace(state, tasks=tasks)


APPLIERS: dict[str, Applier] = {"todo_write": apply_todo_write}


def fold(entries: Iterable[LogEntry], state: SessionState | None = None) -> SessionState:
    current = state or SessionState()
    for entry in entries:
        current = step(current, entry)
    return current


def step(state: SessionState, entry: LogEntry) -> SessionState:
    state = replace(state, seq=entry.seq)
    if entry.kind == "assistant":
        return assistant_step(state, entry)
    if entry.kind == "tool_result":
        return result_step(state, entry)
    return state


def prompt_tokens(data: Mapping[str, Any]) -> int | None:
    """An assistant entry's prompt size: as the provider reported it, else the estimate."""
    usage = data.get("usage") or {}
    tokens = usage.get("input_tokens") or data.get("prompt_tokens_estimate")
    return int(tokens) if tokens else None


def assistant_step(state: SessionState, entry: LogEntry) -> SessionState:
    tokens = prompt_tokens(entry.data)
    calls = {c["id"]: (c["name"], c["arguments"]) for c in entry.data.get("tool_calls", ())}
    return replace(state, open_calls=calls, last_prompt_tokens=tokens or state.last_prompt_tokens)


def result_step(state: SessionState, entry: LogEntry) -> SessionState:
    open_calls = dict(state.open_calls)
    call = open_calls.pop(str(entry.data.get("call_id", "")), None)
    state = replace(state, open_calls=open_calls)
    if call is None or entry.data.get("is_error"):
        return state
    name, arguments = call
    applier = APPLIERS.get(name)
    return applier(state, json.loads(arguments)) if applier else state


def serialise(state: SessionState) -> dict[str, Any]:
    return {
        "version": VERSION,
        "seq": state.seq,
        "tasks": [{"text": t.text, "status": t.status} for t in state.tasks],
        "timers": [dict(t) for t in state.timers],
        "questions": [dict(q) for q in state.questions],
        "subagents": [dict(s) for s in state.subagents],
        "loaded_skills": list(state.loaded_skills),
        "last_prompt_tokens": state.last_prompt_tokens,
        "open_calls": {k: list(v) for k, v in state.open_calls.items()},
    }


UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def deserialise(data: Mapping[str, Any]) -> SessionState:
    raw = dict(data)
    while raw["version"] < VERSION:
        raw = UPGRADES[raw["version"]](raw)
    if raw["version"] != VERSION:
        raise ValueError(f"state version {raw['version']} is newer than this code ({VERSION})")
    return SessionState(
        seq=raw["seq"],
        tasks=tuple(Task(**t) for t in raw["tasks"]),
        timers=tuple(raw["timers"]),
        questions=tuple(raw["questions"]),
        subagents=tuple(raw["subagents"]),
        loaded_skills=tuple(raw["loaded_skills"]),
        last_prompt_tokens=raw["last_prompt_tokens"],
        open_calls={k: (v[0], v[1]) for k, v in raw["open_calls"].items()},
    )
