from __future__ import annotations

from django.apps import AppConfig


class TeamsAppConfig(AppConfig):
    name = "teams_app"
    verbose_name = "Teams"
