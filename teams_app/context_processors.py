from __future__ import annotations

from typing import Any

from django.http import HttpRequest


def teams(request: HttpRequest) -> dict[str, Any]:
    """The teams the current-team middleware already read, for the switcher."""
    return {
        "teams": getattr(request, "team_list", []),
        "current_team": getattr(request, "team", None),
    }
