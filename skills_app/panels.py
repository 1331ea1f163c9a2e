"""Skills and bundles in a session's side panel: what the panel shows, and a change to them.

A change goes through `presets.selections_check`, the one rule the API and the forms use (an
unknown id, or another team's, is refused with its words and nothing changes), and through
`session_skills_set`, which `PATCH /sessions/{id}` uses as well: a change is a
`skills_changed` notice in the log naming what was added and removed, applied from the next
model call, as a memory change is (`memory_app.services.session_memory_set`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from horsie_site.inputs import ID_MAX, bounded_int
from sessions_app.models import Session
from sessions_app.presets import selections_check
from sessions_app.services import InvalidInput, entry_append
from skills_app.models import Bundle, Skill
from skills_app.selectors import skills_selected, visible

FIELDS = {"skills": ("skill", Skill), "bundles": ("bundle", Bundle)}


def session_skills_set(
    *, session: Session, user: Any, skills: Sequence[int], bundles: Sequence[int]
) -> Session:
    """Set the session's skills and bundles (checked by the caller); a change is a notice."""
    before = {"skills": list(session.skills or []), "bundles": list(session.bundles or [])}
    after = {"skills": list(skills), "bundles": list(bundles)}
    session.skills, session.bundles = after["skills"], after["bundles"]
    session.save(update_fields=["skills", "bundles", "updated_at"])
    changes = {
        field: {
            "added": [pk for pk in after[field] if pk not in before[field]],
            "removed": [pk for pk in before[field] if pk not in after[field]],
        }
        for field in FIELDS
    }
    if any(change["added"] or change["removed"] for change in changes.values()):
        entry_append(
            session_id=session.pk, kind="notice", author=user,
            content=change_text(changes), data={"code": "skills_changed", **changes},
        )  # fmt: skip
    return session


def change_text(changes: Mapping[str, Mapping[str, list[int]]]) -> str:
    parts = []
    for field, (word, model) in FIELDS.items():
        ids = [pk for change in changes[field].values() for pk in change]
        names = dict(model.objects.filter(pk__in=ids).values_list("pk", "name"))
        for verb in ("added", "removed"):
            for pk in changes[field][verb]:
                parts.append(f"{verb} {word} `{names.get(pk, pk)}`")
    return f"Skills changed: {'; '.join(parts)}. It applies from the next model call."


def posted_change(*, session: Session, user: Any, data: Any) -> Session:
    """Apply the panel's form (`skill` and `bundle`, ids, each repeated): checked like the
    API's PATCH; a refusal raises `InvalidInput` and changes nothing."""
    chosen: dict[str, list[int]] = {}
    for field, (word, _) in FIELDS.items():
        values = data.getlist(word)
        ids = [bounded_int(value, low=1, high=ID_MAX) for value in values]
        bad = next((value for value, pk in zip(values, ids, strict=True) if pk is None), None)
        if bad is not None:
            raise InvalidInput(f"No such {word}: {bad!r}.")
        chosen[field] = list(dict.fromkeys(pk for pk in ids if pk is not None))
    selections_check(chosen, user=user, team=session.team)
    return session_skills_set(
        session=session, user=user, skills=chosen["skills"], bundles=chosen["bundles"]
    )


def skills_panel(session: Session, user: Any, error: str = "") -> dict[str, Any]:
    """The team's skills and bundles, each checked when selected, and the skills in effect."""
    picked = {"skills": set(session.skills or []), "bundles": set(session.bundles or [])}
    rows = {
        field: [
            {"item": item, "checked": item.pk in picked[field]}
            for item in visible(model, user, team=session.team).order_by("name", "id")
        ]
        for field, (_, model) in FIELDS.items()
    }
    in_effect = skills_selected(session)
    return {
        "session": session,
        "skills": rows["skills"],
        "bundles": rows["bundles"],
        "in_effect": [skill.name for skill in in_effect],
        "error": error,
    }
