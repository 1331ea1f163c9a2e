"""`manage.py horsie_bootstrap`: the first login and the default model card, once.

Run by `make run` before the server starts. The first time it makes a user (default
`admin`) in a team (default `default`) with a random password, keeps that password in
`var/login.txt` (mode 600) so every later run can print the login again, and gives the team
the bundled local model's card.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from sessions_app.services import default_card
from teams_app.services import member_ensure


class Command(BaseCommand):
    help = "Create the first user, team and local model card; print the login."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="admin")
        parser.add_argument("--team", default="default")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(settings.VAR_DIR) / "login.txt"
        if path.exists():
            username, password = path.read_text().split("\n")[:2]
        else:
            username, password = options["username"], secrets.token_urlsafe(12)
            path.write_text(f"{username}\n{password}\n")
            path.chmod(0o600)
        user, team = member_ensure(username=username, team_name=options["team"], password=password)
        if not user.is_staff:
            user.is_staff = user.is_superuser = True
            user.save(update_fields=["is_staff", "is_superuser"])
        card = default_card(team)
        self.stdout.write(f"Team {team.name}; default model card: {card.name}.")
        port = os.environ.get("HORSIE_PORT", "8000")  # where `make run` serves
        self.stdout.write(f"Log in at http://127.0.0.1:{port}/ as {username} / {password}")
