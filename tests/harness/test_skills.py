"""Skills: one line each until loaded; a loaded body survives compaction within its budget."""

from __future__ import annotations

import json

from harness.compaction.policy import Policy
from harness.context import assemble
from harness.loop import run_turn
from harness.messages import SystemMessage
from harness.providers.base import Capabilities
from harness.runtime import Deps, TurnConfig, session_context
from harness.skills import Skill, loaded_skills_text, skill_text, skills_index
from harness.state import SessionState
from harness.testing import InMemorySkills, MemoryStore, RecordingEvents, ScriptedProvider, reply
from harness.tokens import ESTIMATE
from harness.tools import builtin_tools


def skill(n: int, body_words: int = 200) -> Skill:
    return Skill(
        name=f"skill-{n}",
        description=f"Does task number {n} the team's way",
        body=f"BODY-{n} " + "step by careful step " * body_words,
        files=(f"scripts/run-{n}.sh", "reference.md"),
    )


FORTY = [skill(n) for n in range(40)]


def setup(skills: list[Skill], steps, policy: Policy | None = None):
    store = MemoryStore()
    config = TurnConfig(
        session_id=1,
        system_prompt="You are terse.",
        max_steps=4,
        max_output_tokens=100,
        model="scripted",
        policy=policy or Policy(window=None, max_output_tokens=100),
    )
    provider = ScriptedProvider(steps, default=reply("ok"))
    deps = Deps(
        store=store,
        events=RecordingEvents(),
        provider=provider,
        tools=builtin_tools(skills=bool(skills)),
        skills=InMemorySkills(skills=skills),
    )
    return store, config, deps, provider


def load(call_id: str, name: str) -> tuple[str, str, str]:
    return (call_id, "load_skill", json.dumps({"name": name}))


def test_forty_selected_skills_cost_one_line_each_and_no_body():
    bare = assemble(system_prompt="You are terse.", tools=[], entries=[])
    with_skills = assemble(system_prompt="You are terse.", tools=[], entries=[], skills=FORTY)
    added = with_skills.tokens - bare.tokens
    index = skills_index(FORTY)
    lines = index.splitlines()[1:]
    assert len(lines) == 40
    assert lines[7] == "- skill-7 — Does task number 7 the team's way"
    per_line = max(ESTIMATE.count(line) for line in lines) + 1
    assert added <= 40 * per_line + ESTIMATE.count(lines[0]) + ESTIMATE.overhead + 2
    bodies = sum(ESTIMATE.count(s.body) for s in FORTY)
    assert added * 20 < bodies, "forty lines, not forty documents"
    system = with_skills.messages[0]
    assert isinstance(system, SystemMessage) and "skill-39" in system.text
    assert not any("BODY-" in getattr(m, "text", "") for m in with_skills.messages)
    kinds = [b.kind for b in with_skills.blocks]
    assert kinds == ["system", "skills"]
    assert (
        assemble(system_prompt="s", tools=[], entries=[], skills=()).tokens
        == assemble(system_prompt="s", tools=[], entries=[]).tokens
    )


def test_four_hundred_skills_cost_one_line_each_and_no_body_in_the_one_builder():
    many = [skill(n) for n in range(400)]
    calibrated = SessionState(calibration=1.25, calibrated_on=9)

    def view(skills: list[Skill]):
        return session_context(
            system_prompt="You are terse.", tools=[], entries=[], state=calibrated,
            capabilities=Capabilities(tools=True, streaming_usage=True), counter=ESTIMATE,
            policy=Policy(window=None, max_output_tokens=100), skills=skills,
        )  # fmt: skip

    bare, full = view([]), view(many)
    counter = full.counter
    assert "× 1.25" in counter.describe(), "counted by the session's calibrated counter"
    added = full.context.tokens - bare.context.tokens
    lines = skills_index(many).splitlines()
    assert len(lines) == 401 and lines[400] == "- skill-399 — Does task number 399 the team's way"
    assert added <= sum(counter.count(line) + 1 for line in lines) + counter.overhead
    assert added >= sum(counter.count(line) for line in lines[1:]) // 2
    bodies = sum(counter.count(s.body) for s in many)
    assert added * 20 < bodies, "four hundred lines, not four hundred documents"
    texts = [getattr(m, "text", "") for m in full.context.messages]
    assert not any("BODY-" in t or "careful step" in t for t in texts)
    assert all(f"- skill-{n} —" in texts[0] for n in range(400))
    assert [b.kind for b in full.context.blocks] == ["system", "skills"]


def test_load_skill_is_offered_only_with_skills_selected():
    assert "load_skill" in builtin_tools(skills=True)
    assert "load_skill" not in builtin_tools()


async def test_load_skill_returns_the_body_and_files_and_records_the_load():
    store, config, deps, provider = setup(FORTY, [reply("", load("c1", "skill-3"))])
    await store.append(1, kind="user", content="do task 3")
    await run_turn(config, deps)
    result = next(e for e in store.entries if e.kind == "tool_result")
    assert not result.data["is_error"]
    assert FORTY[3].body in result.content
    assert "scripts/run-3.sh" in result.content and "reference.md" in result.content
    assert (await store.state(1)).loaded_skills == ("skill-3",)
    assert "BODY-3" in provider.requests[1].messages[-1].text  # type: ignore[union-attr]


async def test_an_unknown_skill_is_an_error_naming_the_skills_and_loads_nothing():
    store, config, deps, _ = setup(FORTY[:3], [reply("", load("c1", "nope"))])
    await store.append(1, kind="user", content="go")
    await run_turn(config, deps)
    result = next(e for e in store.entries if e.kind == "tool_result")
    assert result.data["is_error"]
    assert "'nope'" in result.content and "skill-0, skill-1, skill-2" in result.content
    assert (await store.state(1)).loaded_skills == ()


async def compacted_after_loading(names: list[str], policy: Policy):
    steps = [reply("", *(load(f"c{i}", n) for i, n in enumerate(names))), reply("loaded")]
    store, config, deps, provider = setup(FORTY, steps, policy)
    await store.append(1, kind="user", content="load them")
    await run_turn(config, deps)
    for n in range(4):
        await store.append(1, kind="user", content=f"more work {n} " + "words " * 300)
        provider.steps = [reply("done " + "words " * 200)]
        await run_turn(config, deps)
    await store.append(1, kind="command", content="/compact", data={"name": "compact"})
    provider.steps = [reply("Summary of the work so far.")]
    await run_turn(config, deps)
    assert any(e.kind == "boundary" for e in store.entries)
    await store.append(1, kind="user", content="carry on")
    provider.steps = [reply("after")]
    await run_turn(config, deps)
    return store, config, deps, provider


async def test_a_loaded_skill_s_body_is_back_verbatim_after_a_compaction():
    policy = Policy(window=20_000, max_output_tokens=100, auto=False)
    store, _, _, provider = await compacted_after_loading(["skill-5"], policy)
    last = provider.requests[-1]
    texts = [getattr(m, "text", "") for m in last.messages]
    assert not any(e.kind == "tool_result" and e.seq >= cut(store) for e in store.entries)
    assert any(skill_text(FORTY[5]) in t for t in texts), "verbatim, after the summary"
    summary_at = next(i for i, t in enumerate(texts) if "Summary of the work" in t)
    body_at = next(i for i, t in enumerate(texts) if FORTY[5].body in t)
    assert body_at > summary_at
    assert not [e for e in store.entries if e.data.get("code") == "skills_dropped"]


async def test_the_skills_budget_drops_the_oldest_and_says_so():
    one_body = ESTIMATE.count(skill_text(FORTY[0]))
    policy = Policy(
        window=20_000, max_output_tokens=100, auto=False, skills_fraction=1.5 * one_body / 20_000
    )
    store, _, _, provider = await compacted_after_loading(["skill-1", "skill-2"], policy)
    texts = " ".join(getattr(m, "text", "") for m in provider.requests[-1].messages)
    assert FORTY[2].body in texts, "the newest load is kept"
    assert FORTY[1].body not in texts
    assert "skills dropped (over the skills budget, oldest first): skill-1" in texts
    notice = next(e for e in store.entries if e.data.get("code") == "skills_dropped")
    assert notice.data["skills"] == ["skill-1"] and "skill-1" in notice.content


def test_attached_bodies_drop_oldest_first_and_name_those_no_longer_selected():
    dropped = loaded_skills_text(["skill-1", "skill-2", "skill-3"], FORTY, ESTIMATE, 10)
    assert dropped.dropped == ("skill-1", "skill-2", "skill-3") and dropped.attached == ()
    kept = loaded_skills_text(["skill-1", "gone"], FORTY, ESTIMATE, None)
    assert kept.attached == ("skill-1",) and kept.missing == ("gone",)
    assert "no longer selected" in kept.text


def cut(store: MemoryStore) -> int:
    boundary = [e for e in store.entries if e.kind == "boundary"][-1]
    return int(boundary.data["first_kept_seq"])
