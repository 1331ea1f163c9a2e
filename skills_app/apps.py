from __future__ import annotations

from django.apps import AppConfig


class SkillsAppConfig(AppConfig):
    name = "skills_app"
