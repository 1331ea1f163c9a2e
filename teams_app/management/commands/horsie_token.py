"""`manage.py horsie_token USERNAME --team TEAM`: the user and team are made when missing.

The first member of a new team is its admin; an existing member keeps their role.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from teams_app.services import member_ensure, token_issue


class Command(BaseCommand):
    help = "Create an API token for a user (creating the user and team when missing)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--team", required=True)
        parser.add_argument("--name", default="cli")

    def handle(self, *args: Any, **options: Any) -> None:
        user, team = member_ensure(username=options["username"], team_name=options["team"])
        self.stdout.write(f"User {user.username} is a member of team {team.name}.")
        self.stdout.write(token_issue(user=user, name=options["name"]))
