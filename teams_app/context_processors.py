from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from teams_app.selectors import teams_of


def teams(request: HttpRequest) -> dict[str, Any]:
    if not request.user.is_authenticated:
        return {}
    return {"teams": list(teams_of(request.user)), "current_team": getattr(request, "team", None)}
