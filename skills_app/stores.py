"""The core's `SkillSource` on the ORM: the skills a session selected, directly or through
its bundles, read on every model call (an edit applies on the next call)."""

from __future__ import annotations

from collections.abc import Sequence

from harness import skills as core
from sessions_app.models import Session
from sessions_app.threads import db
from skills_app.selectors import skills_selected


def skills_now(session: Session) -> list[core.Skill]:
    return [
        core.Skill(
            name=skill.name,
            description=skill.description,
            body=skill.body,
            files=tuple(sorted(skill.files or {})),
        )
        for skill in skills_selected(session)
    ]


def skills_of(session_id: int) -> list[core.Skill]:
    session = Session.objects.only("team_id", "skills", "bundles").get(pk=session_id)
    return skills_now(session)


class OrmSkillSource:
    async def selected(self, session_id: int) -> Sequence[core.Skill]:
        skills: list[core.Skill] = await db(skills_of)(session_id)
        return skills
