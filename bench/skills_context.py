"""Skills in context: what 0, 40 and 400 selected skills add to the context built before
every model call, and the time to build it.

Each session selects that many skills of the team's (each with a ~1,000-token body and two
files). The context is built by the one builder, `harness.runtime.session_context`, through
`session_view` as the turn and the page build it, and its tokens are counted by the session's
own counter (the card's wire's). `added` is what selecting them adds (the index and the
`load_skill` tool offered with it), `index` the index block alone. `view ms` is the median of RUNS whole builds as a call
makes them (session, state, entries and skills read from the database, assembled, counted);
`build ms` the builder alone on what was read (assembled and counted); `bodies` is what the same skills would cost loaded,
to show the index costs a line each and no body. SQLite by default; a fresh PostgreSQL
database when DATABASE_URL names one.
"""

from __future__ import annotations

import time

from _setup import django_here, median

RUNS = 30
SKILLS = 400
BODY = "Follow the team's checklist step by step, and write down what you changed. " * 55


def main() -> None:
    django_here(postgres=True)
    from harness.runtime import session_context
    from horsie_site import wiring
    from sessions_app.services import session_create
    from sessions_app.stores import session_view
    from skills_app.models import Skill
    from teams_app.services import member_ensure

    user, team = member_ensure(username="bench", team_name="bench", password="x" * 12)
    skills = Skill.objects.bulk_create(
        Skill(
            team=team,
            name=f"skill-{n:03d}",
            description=f"Handles task family {n} the way the team agreed",
            body=BODY,
            files={"scripts/run.sh": "", "reference.md": ""},
            created_by=user,
        )
        for n in range(SKILLS)
    )
    print(f"{'skills':>6} {'context tokens':>15} {'added':>7} {'index':>6} {'per skill':>10} "
          f"{'bodies if loaded':>17} {'view ms':>8} {'build ms':>9}")  # fmt: skip
    bare = None
    for count in (0, 40, 400):
        session = session_create(user=user, team=team, fields={"title": f"{count} skills"})
        session.skills = [s.pk for s in skills[:count]]
        session.save(update_fields=["skills"])
        times = []
        for _ in range(RUNS):
            started = time.perf_counter()
            view = session_view(session)
            times.append((time.perf_counter() - started) * 1000)
        capabilities, counter = wiring.ruler_for(session.model)
        tools = [tool.spec for tool in wiring.tools_for(session).values()]
        builds = []
        for _ in range(RUNS):
            started = time.perf_counter()
            built = session_context(
                system_prompt=session.system_prompt, tools=tools, capabilities=capabilities,
                entries=view.entries, state=view.state, counter=counter, policy=view.policy,
                memory=(), skills=view.skills,
            )  # fmt: skip
            builds.append((time.perf_counter() - started) * 1000)
        assert built.context.tokens == view.context.tokens
        tokens = view.context.tokens
        bare = tokens if bare is None else bare
        added = tokens - bare
        index = sum(b.tokens for b in view.context.blocks if b.kind == "skills")
        per_skill = f"{index / count:.1f}" if count else "-"
        bodies = sum(view.counter.count(s.body) for s in view.skills)
        assert "Follow the team's checklist" not in view.context.messages[0].text  # type: ignore[union-attr]
        print(f"{count:>6} {tokens:>15,} {added:>7,} {index:>6,} {per_skill:>10} {bodies:>17,} "
              f"{median(times):>8.2f} {median(builds):>9.2f}")  # fmt: skip
    print(f"counter: {view.counter.describe()}")


if __name__ == "__main__":
    main()
