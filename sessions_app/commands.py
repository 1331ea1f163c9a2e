"""The slash-command registry of a session: the built-ins and its team's templates.

The registry itself is the core's (`harness.commands`); the team's templates come from
`skills_app.selectors.commands_of(team)` once that app provides it (each with `name`,
`description` and `template`), and until then a team has none.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from harness.commands import Registry, Template
from sessions_app.models import Session
from teams_app.models import Team


def field_of(item: Any, name: str) -> str:
    value = item.get(name) if isinstance(item, Mapping) else getattr(item, name, "")
    return str(value or "")


def source() -> Callable[[Team], Iterable[Any]] | None:
    try:
        selectors = importlib.import_module("skills_app.selectors")
    except ImportError:
        return None
    found = getattr(selectors, "commands_of", None)
    return found if callable(found) else None


def team_templates(team: Team) -> list[Template]:
    commands_of = source()
    if commands_of is None:
        return []
    return [
        Template(
            name=field_of(item, "name"),
            description=field_of(item, "description"),
            template=field_of(item, "template"),
        )
        for item in commands_of(team)
    ]


def registry_of(session: Session) -> Registry:
    return Registry.of(team_templates(session.team))
