"""The slash-command registry of a session: the built-ins and its team's templates.

The registry itself is the core's (`harness.commands`); the team's templates are the
team's `SlashCommand`s (skills_app), read when a command is sent or completed.
"""

from __future__ import annotations

from harness.commands import Registry, Template
from sessions_app.models import Session
from skills_app.selectors import commands_of


def registry_of(session: Session) -> Registry:
    return Registry.of(
        Template(name=c.name, description=c.description, template=c.template)
        for c in commands_of(session.team)
    )
