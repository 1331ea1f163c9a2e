"""Durable state as a fold of the log.

The session's state is never stored beside the log as a second truth: it is what folding
the entries gives (a snapshot is only that fold, saved at some seq). Tools that change state
are folded from the call the model made and the result it got, applied only when the result
came back without error, so a call that failed or never finished changes nothing:

- `todo_write` replaces the task list (from the call's arguments);
- `set_timer` arms the timer its result names, `cancel_timer` disarms one, and a `timer`
  entry (the timer fired) disarms it too;
- `ask_user` records the question its result names; an `answer` entry settles it;
- `load_skill` records the skill its result names as loaded (a reload moves it last, so
  `loaded_skills` runs oldest load first);
- `spawn_subagent` adds the child its result names (`{id, type, task}`) to the running
  subagents; the child's `subagent_result` entry removes it;
- a `/compact` command is pending until the next boundary;
- a boundary carries the durable state verbatim, so a fork's first entry gives it its state;
- the session's ruler: the calibration of its counter (the provider's reported prompt
  tokens over the estimate of that same request, from the last call that reported both),
  the window the server was found to accept (`window_learned` notices), and the newest entry
  a notice has already said was shown shortened.

The serialised form carries `version`; every older version has an upgrade step in
`UPGRADES`, and tests load a stored example of each (`tests/harness/fixtures/`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from harness.commands import COMPACT, HANDOFF
from harness.messages import LogEntry
from harness.tokens import calibration

VERSION = 3
MAX_TOKENS = 1_000_000_000  # a count above this is nonsense, not a prompt


@dataclass(frozen=True, kw_only=True)
class Task:
    text: str
    status: str


@dataclass(frozen=True, kw_only=True)
class Timer:
    id: str
    message: str
    seconds: float
    due_at: str  # ISO 8601, UTC


@dataclass(frozen=True, kw_only=True)
class Question:
    id: str
    question: str
    options: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class SessionState:
    tasks: tuple[Task, ...] = ()
    timers: tuple[Timer, ...] = ()
    questions: tuple[Question, ...] = ()
    subagents: tuple[Mapping[str, Any], ...] = ()
    loaded_skills: tuple[str, ...] = ()
    last_prompt_tokens: int | None = None
    open_calls: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    pending_compact: Mapping[str, Any] | None = None
    pending_handoff: int | None = None
    calibration: float | None = None
    calibrated_on: int | None = None
    effective_window: int | None = None
    shortened_noticed: int = 0
    seq: int = 0

    def timer(self, timer_id: str) -> Timer | None:
        return next((t for t in self.timers if t.id == timer_id), None)

    def question(self, question_id: str) -> Question | None:
        return next((q for q in self.questions if q.id == question_id), None)


COMPACT_SETTLED = ("nothing_to_fold", "compaction_failed")
HANDOFF_SETTLED = ("handoff", "handoff_failed")
Applier = Callable[[SessionState, Mapping[str, Any], Mapping[str, Any]], SessionState]


def apply_todo_write(
    state: SessionState, arguments: Mapping[str, Any], result: Mapping[str, Any]
) -> SessionState:
    tasks = tuple(Task(text=str(t["text"]), status=str(t["status"])) for t in arguments["tasks"])
    return replace(state, tasks=tasks)


def apply_set_timer(
    state: SessionState, arguments: Mapping[str, Any], result: Mapping[str, Any]
) -> SessionState:
    return replace(state, timers=(*state.timers, timer_from(result["timer"])))


def apply_cancel_timer(
    state: SessionState, arguments: Mapping[str, Any], result: Mapping[str, Any]
) -> SessionState:
    return timer_gone(state, str(result.get("timer_id", "")))


def apply_ask_user(
    state: SessionState, arguments: Mapping[str, Any], result: Mapping[str, Any]
) -> SessionState:
    return replace(state, questions=(*state.questions, question_from(result["question"])))


def apply_load_skill(
    state: SessionState, arguments: Mapping[str, Any], result: Mapping[str, Any]
) -> SessionState:
    name = str(result["skill"])
    return replace(state, loaded_skills=(*(s for s in state.loaded_skills if s != name), name))


def apply_spawn_subagent(
    state: SessionState, arguments: Mapping[str, Any], result: Mapping[str, Any]
) -> SessionState:
    child = dict(result["subagent"])
    return replace(state, subagents=(*state.subagents, child))


def subagent_gone(state: SessionState, child: object) -> SessionState:
    return replace(state, subagents=tuple(s for s in state.subagents if s.get("id") != child))


APPLIERS: dict[str, Applier] = {
    "todo_write": apply_todo_write,
    "set_timer": apply_set_timer,
    "cancel_timer": apply_cancel_timer,
    "ask_user": apply_ask_user,
    "load_skill": apply_load_skill,
    "spawn_subagent": apply_spawn_subagent,
}


def timer_gone(state: SessionState, timer_id: str) -> SessionState:
    return replace(state, timers=tuple(t for t in state.timers if t.id != timer_id))


def fold(entries: Iterable[LogEntry], state: SessionState | None = None) -> SessionState:
    current = state or SessionState()
    for entry in entries:
        current = step(current, entry)
    return current


def step(state: SessionState, entry: LogEntry) -> SessionState:
    state = replace(state, seq=entry.seq)
    match entry.kind:
        case "assistant":
            return assistant_step(state, entry)
        case "tool_result":
            return result_step(state, entry)
        case "timer":
            return timer_gone(state, str(entry.data.get("timer", "")))
        case "subagent_result":
            return subagent_gone(state, entry.data.get("subagent"))
        case "answer":
            settled = str(entry.data.get("question", ""))
            return replace(state, questions=tuple(q for q in state.questions if q.id != settled))
        case "command" if entry.data.get("name") == COMPACT:
            pending = {"seq": entry.seq, "instructions": entry.data.get("instructions")}
            return replace(state, pending_compact=pending)
        case "command" if entry.data.get("name") == HANDOFF:
            return replace(state, pending_handoff=entry.seq)
        case "boundary":
            return boundary_step(state, entry)
        case "notice" if entry.data.get("code") in COMPACT_SETTLED:
            return replace(state, pending_compact=None)
        case "notice" if entry.data.get("code") in HANDOFF_SETTLED:
            return replace(state, pending_handoff=None)
        case "notice" if entry.data.get("code") == "window_learned":
            return window_step(state, entry)
        case "notice" if entry.data.get("code") == "input_shortened":
            seqs = [s for s in entry.data.get("seqs", ()) if count_of(s) is not None]
            return replace(state, shortened_noticed=max([state.shortened_noticed, *seqs]))
        case _:
            return state


def changes_state(entry: LogEntry) -> bool:
    """Whether folding this entry can change what `GET /state` shows."""
    if entry.kind == "tool_result":
        return str(entry.data.get("name", "")) in APPLIERS and not entry.data.get("is_error")
    if entry.kind == "notice":
        return entry.data.get("code") in (*COMPACT_SETTLED, *HANDOFF_SETTLED)
    return entry.kind in ("timer", "answer", "boundary", "subagent_result") or (
        entry.kind == "command" and entry.data.get("name") in (COMPACT, HANDOFF)
    )


def count_of(value: object) -> int | None:
    """A token count as stored, or None when it is not a sane one (a provider's nonsense)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 < value <= MAX_TOKENS else None


def reported_prompt(data: Mapping[str, Any]) -> int | None:
    usage = data.get("usage")
    return count_of(usage.get("input_tokens")) if isinstance(usage, Mapping) else None


def token_count(value: Any) -> int | None:
    """A token figure read from an entry, when it is one: an int in [0, MAX_TOKENS].

    Entries hold what providers reported, and a provider can report anything (a string, a
    negative or absurd number, a float, null): such a figure counts as unknown.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_TOKENS else None


def prompt_tokens(data: Mapping[str, Any]) -> int | None:
    """An assistant entry's prompt size: as the provider reported it, else the estimate."""
    return reported_prompt(data) or count_of(data.get("prompt_tokens_estimate"))


def assistant_step(state: SessionState, entry: LogEntry) -> SessionState:
    tokens = prompt_tokens(entry.data)
    calls = {c["id"]: (c["name"], c["arguments"]) for c in entry.data.get("tool_calls", ())}
    state = replace(state, open_calls=calls, last_prompt_tokens=tokens or state.last_prompt_tokens)
    return calibrated(state, entry, reported_prompt(entry.data))


def calibrated(state: SessionState, entry: LogEntry, reported: int | None) -> SessionState:
    ratio = calibration(reported, count_of(entry.data.get("prompt_tokens_estimate")))
    if ratio is None:
        return state
    return replace(state, calibration=ratio, calibrated_on=entry.seq)


def window_step(state: SessionState, entry: LogEntry) -> SessionState:
    window = count_of(entry.data.get("effective_window"))
    state = replace(state, effective_window=window or state.effective_window)
    return calibrated(state, entry, count_of(entry.data.get("reported_prompt")))


def result_step(state: SessionState, entry: LogEntry) -> SessionState:
    open_calls = dict(state.open_calls)
    call = open_calls.pop(str(entry.data.get("call_id", "")), None)
    state = replace(state, open_calls=open_calls)
    if call is None or entry.data.get("is_error"):
        return state
    name, arguments = call
    applier = APPLIERS.get(name)
    return applier(state, json.loads(arguments), entry.data) if applier else state


def boundary_step(state: SessionState, entry: LogEntry) -> SessionState:
    carried = entry.data.get("carried")
    state = replace(state, pending_compact=None)
    if not isinstance(carried, Mapping):
        return state
    return replace(state, **durable_from(carried))


# Serialisation -------------------------------------------------------------------------


def timer_json(timer: Timer) -> dict[str, Any]:
    return {
        "id": timer.id,
        "message": timer.message,
        "seconds": timer.seconds,
        "due_at": timer.due_at,
    }


def timer_from(raw: Mapping[str, Any]) -> Timer:
    return Timer(
        id=str(raw["id"]),
        message=str(raw["message"]),
        seconds=float(raw["seconds"]),
        due_at=str(raw["due_at"]),
    )


def question_json(question: Question) -> dict[str, Any]:
    return {"id": question.id, "question": question.question, "options": list(question.options)}


def question_from(raw: Mapping[str, Any]) -> Question:
    return Question(
        id=str(raw["id"]),
        question=str(raw["question"]),
        options=tuple(str(o) for o in raw.get("options") or ()),
    )


def durable(state: SessionState) -> dict[str, Any]:
    """What a boundary carries verbatim and `GET /state` shows."""
    return {
        "tasks": [{"text": t.text, "status": t.status} for t in state.tasks],
        "timers": [timer_json(t) for t in state.timers],
        "questions": [question_json(q) for q in state.questions],
        "subagents": [dict(s) for s in state.subagents],
        "loaded_skills": list(state.loaded_skills),
    }


def durable_from(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "tasks": tuple(Task(text=str(t["text"]), status=str(t["status"])) for t in raw["tasks"]),
        "timers": tuple(timer_from(t) for t in raw["timers"]),
        "questions": tuple(question_from(q) for q in raw["questions"]),
        "subagents": tuple(raw["subagents"]),
        "loaded_skills": tuple(str(s) for s in raw["loaded_skills"]),
    }


def serialise(state: SessionState) -> dict[str, Any]:
    return {
        "version": VERSION,
        "seq": state.seq,
        **durable(state),
        "last_prompt_tokens": state.last_prompt_tokens,
        "open_calls": {k: list(v) for k, v in state.open_calls.items()},
        "pending_compact": dict(state.pending_compact) if state.pending_compact else None,
        "pending_handoff": state.pending_handoff,
        "calibration": state.calibration,
        "calibrated_on": state.calibrated_on,
        "effective_window": state.effective_window,
        "shortened_noticed": state.shortened_noticed,
    }


def upgrade_1_to_2(raw: dict[str, Any]) -> dict[str, Any]:
    """Version 2 types timers and questions and adds the pending `/compact` and `/handoff`.

    Version 1 never held a timer or a question (no tool could arm or ask one yet).
    """
    return {
        **raw,
        "version": 2,
        "timers": [],
        "questions": [],
        "pending_compact": None,
        "pending_handoff": None,
    }


def upgrade_2_to_3(raw: dict[str, Any]) -> dict[str, Any]:
    """Version 3 adds the session's ruler: calibration, the learned window, shortened inputs.

    Version 2 never learned a window; its calibration is found again at the next call.
    """
    return {
        **raw,
        "version": 3,
        "calibration": None,
        "calibrated_on": None,
        "effective_window": None,
        "shortened_noticed": 0,
    }


UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    1: upgrade_1_to_2,
    2: upgrade_2_to_3,
}


def deserialise(data: Mapping[str, Any]) -> SessionState:
    raw = dict(data)
    while raw["version"] < VERSION:
        raw = UPGRADES[raw["version"]](raw)
    if raw["version"] != VERSION:
        raise ValueError(f"state version {raw['version']} is newer than this code ({VERSION})")
    pending = raw["pending_compact"]
    return SessionState(
        seq=raw["seq"],
        **durable_from(raw),
        last_prompt_tokens=raw["last_prompt_tokens"],
        open_calls={k: (v[0], v[1]) for k, v in raw["open_calls"].items()},
        pending_compact=dict(pending) if pending else None,
        pending_handoff=raw["pending_handoff"],
        calibration=raw["calibration"],
        calibrated_on=raw["calibrated_on"],
        effective_window=raw["effective_window"],
        shortened_noticed=raw["shortened_noticed"],
    )
