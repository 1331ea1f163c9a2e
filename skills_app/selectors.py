"""Reads with access checks: one helper per object type, answering 404 for what is not yours.

Skills, bundles, commands and subagent types are the team's: every member sees them all, and
another team's answers 404. `skills_selected` and `commands_of` are what the core's wiring
reads for a session: plain lists, in a stable order (by name), so the skills index keeps the
same text from call to call and the provider's prompt cache holds.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.db.models import Model, Q, QuerySet
from django.http import Http404

from skills_app.models import Bundle, Skill, SlashCommand, SubagentType
from teams_app.selectors import teams_of

M = TypeVar("M", bound=Model)


def visible(model: type[M], user: Any, *, team: Any = None) -> QuerySet[M]:
    if not user.is_authenticated:
        return model.objects.none()  # type: ignore[attr-defined,no-any-return]
    rows = model.objects.filter(team__in=teams_of(user)).select_related("team")  # type: ignore[attr-defined]
    return rows.filter(team=team) if team is not None else rows  # type: ignore[no-any-return]


def access(model: type[M], user: Any, pk: Any, what: str) -> M:
    try:
        return visible(model, user).get(pk=int(pk))
    except (ValueError, TypeError, OverflowError, model.DoesNotExist):  # type: ignore[attr-defined]
        raise Http404(f"No such {what}.") from None


def skills_visible(user: Any, *, team: Any = None, q: str = "") -> QuerySet[Skill]:
    """The user's teams' skills; `q` searches names, descriptions and bodies."""
    skills = visible(Skill, user, team=team)
    if q:
        skills = skills.filter(
            Q(name__icontains=q) | Q(description__icontains=q) | Q(body__icontains=q)
        )
    return skills.order_by("name", "id")


def access_skill(user: Any, pk: Any) -> Skill:
    return access(Skill, user, pk, "skill")


def access_bundle(user: Any, pk: Any) -> Bundle:
    return access(Bundle, user, pk, "bundle")


def access_command(user: Any, pk: Any) -> SlashCommand:
    return access(SlashCommand, user, pk, "slash command")


def access_subagent_type(user: Any, pk: Any) -> SubagentType:
    return access(SubagentType, user, pk, "subagent type")


def bundles_visible(user: Any, *, team: Any = None) -> QuerySet[Bundle]:
    return visible(Bundle, user, team=team).prefetch_related("skills")


def commands_visible(user: Any, *, team: Any = None) -> QuerySet[SlashCommand]:
    return visible(SlashCommand, user, team=team)


def subagent_types_visible(user: Any, *, team: Any = None) -> QuerySet[SubagentType]:
    return visible(SubagentType, user, team=team)


# For the core's wiring ------------------------------------------------------------------


def skills_selected(session: Any) -> list[Skill]:
    """The session's skills and its bundles' skills, each once, by name. Only the session's
    team's: a selection never reaches across teams, whatever it holds."""
    skill_ids = [pk for pk in session.skills or [] if isinstance(pk, int)]
    bundle_ids = [pk for pk in session.bundles or [] if isinstance(pk, int)]
    if not (skill_ids or bundle_ids):
        return []  # the ORM would build (and then not run) the query: most sessions pick none
    rows = Skill.objects.filter(team_id=session.team_id).filter(
        Q(pk__in=skill_ids) | Q(bundle_id__in=bundle_ids)
    )
    return list(rows.distinct().order_by("name", "id"))


def subagent_types_selected(session: Any) -> list[SubagentType]:
    """The session's subagent types, by name (its team's only)."""
    ids = [pk for pk in session.subagent_types or [] if isinstance(pk, int)]
    rows = SubagentType.objects.filter(team_id=session.team_id, pk__in=ids)
    return list(rows.select_related("model").order_by("name", "id"))


def commands_of(team: Any) -> list[SlashCommand]:
    """The team's slash commands, by name."""
    return list(SlashCommand.objects.filter(team=team).order_by("name", "id"))


def skill_named(team: Any, name: str) -> Skill | None:
    return Skill.objects.filter(team=team, name=name).first()


# Selections -----------------------------------------------------------------------------

SELECTABLE: dict[str, tuple[type[Model], str]] = {
    "skills": (Skill, "skill"),
    "bundles": (Bundle, "bundle"),
    "subagent_types": (SubagentType, "subagent type"),
}


class SelectionRefused(ValueError):
    """A selection naming something the user may not select (the API's 400)."""


def selection_check(*, user: Any, team: Any, field: str, ids: list[int]) -> None:
    """Each id of `field` (skills, bundles, subagent_types) exists, is visible to `user`,
    belongs to `team`, and is named once."""
    model, what = SELECTABLE[field]
    found = visible(model, user).filter(pk__in=ids).in_bulk()
    seen: set[int] = set()
    for pk in ids:
        item = found.get(pk)
        if item is None:
            raise SelectionRefused(f"No such {what}: {pk}.")
        if item.team_id != team.pk:  # type: ignore[attr-defined]
            raise SelectionRefused(f"The {what} {pk} belongs to another team.")
        if pk in seen:
            raise SelectionRefused(f"The {what} {pk} is selected twice.")
        seen.add(pk)
