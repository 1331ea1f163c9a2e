"""`manage.py horsie_user NAME --team TEAM [--admin]`: a user who can log in in the browser.

The user and team are made when missing; the first member of a team is its admin whatever
the flag says, and the flag never demotes. Each run sets a new random password and prints it
as the last line: it is stored only as a hash, so this is the one time it can be read.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from teams_app.selectors import role_of
from teams_app.services import user_with_password


class Command(BaseCommand):
    help = "Create a user who can log in (and the team when missing); print a new password."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--team", required=True)
        parser.add_argument("--admin", action="store_true", help="make the user a team admin")

    def handle(self, *args: Any, **options: Any) -> None:
        user, team, password = user_with_password(
            username=options["username"], team_name=options["team"], admin=options["admin"]
        )
        role = role_of(user, team)
        self.stdout.write(f"User {user.username} is {role} of team {team.name}; password:")
        self.stdout.write(password)
