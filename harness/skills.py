"""Skills in the core: the values, the port the apps implement, and progressive disclosure.

A skill is a name, a one-line description and a body (with the names of the files kept
beside it). A session's selected skills cost one line each in the system block, the
**skills index** (`skills_index`), placed after the tool list and before memory; a body
enters the context only when the agent loads it with `load_skill` (its `tool_result`).

Loaded skills are durable state (`SessionState.loaded_skills`, in the order they were
loaded, a reload moving a skill to the end). A boundary carries them, and the context after
it attaches their bodies again, verbatim, read afresh from the `SkillSource`
(`loaded_skills_text`), after the carried state. The attachment keeps within the skills
budget (a `Policy` share of the window): the newest loads are kept, the oldest dropped
first, and every skill left out is named inside the block and in `LoadedSkills.dropped`,
which the compaction runner turns into a `skills_dropped` notice. A skill whose load result
is still in the verbatim part of the context is not attached twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from harness.tokens import TokenCounter

INDEX_HEADER = "Skills you can load with load_skill (name — description):"
LOADED_HEADER = "[Skills loaded before the summary, attached again verbatim]"
LOAD_SKILL = "load_skill"


@dataclass(frozen=True, kw_only=True)
class Skill:
    name: str
    description: str
    body: str
    files: tuple[str, ...] = ()


class SkillSource(Protocol):
    """The skills a session selected (directly or through bundles), read on every call."""

    async def selected(self, session_id: int) -> Sequence[Skill]: ...


def one_line(text: str) -> str:
    return " ".join(text.split())


def skills_index(skills: Sequence[Skill]) -> str:
    """One line per selected skill, and nothing when none is selected."""
    if not skills:
        return ""
    lines = [f"- {one_line(s.name)} — {one_line(s.description)}" for s in skills]
    return "\n".join([INDEX_HEADER, *lines])


def by_name(skills: Sequence[Skill], name: str) -> Skill | None:
    return next((s for s in skills if s.name == name), None)


def names_of(skills: Sequence[Skill]) -> str:
    return ", ".join(s.name for s in skills) or "none"


def skill_text(skill: Skill) -> str:
    """What `load_skill` returns, and what is attached again after a compaction."""
    text = f"Skill {skill.name}: {one_line(skill.description)}\n\n{skill.body}"
    if skill.files:
        text += "\n\nFiles kept with this skill: " + ", ".join(skill.files)
    return text


@dataclass(frozen=True, kw_only=True)
class LoadedSkills:
    text: str = ""
    attached: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()  # over the budget, oldest first
    missing: tuple[str, ...] = ()  # loaded once, no longer selected


def loaded_skills_text(
    loaded: Sequence[str],
    skills: Sequence[Skill],
    counter: TokenCounter,
    budget: int | None,
) -> LoadedSkills:
    """The bodies of `loaded` (oldest first), newest kept first within `budget` tokens.

    Every skill left out is named in the block, so nothing is dropped silently."""
    kept: list[Skill] = []
    dropped: list[str] = []
    missing: list[str] = []
    room = budget
    for name in reversed(loaded):
        skill = by_name(skills, name)
        if skill is None:
            missing.insert(0, name)
            continue
        cost = counter.count(skill_text(skill))
        if room is not None and (cost > room or dropped):
            dropped.insert(0, name)
            continue
        kept.insert(0, skill)
        room = None if room is None else room - cost
    parts = [skill_text(s) for s in kept]
    if dropped:
        parts.append(
            "skills dropped (over the skills budget, oldest first): "
            + ", ".join(dropped)
            + ". load_skill reads one again."
        )
    if missing:
        parts.append("skills no longer selected for this session: " + ", ".join(missing) + ".")
    text = f"{LOADED_HEADER}\n" + "\n\n---\n\n".join(parts) if parts else ""
    return LoadedSkills(
        text=text,
        attached=tuple(s.name for s in kept),
        dropped=tuple(dropped),
        missing=tuple(missing),
    )
