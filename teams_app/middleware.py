"""The team the browser is working in, chosen with the team switcher and kept in the session.

Pages only: the API names teams explicitly, so its requests skip this query.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from teams_app.selectors import teams_of


class CurrentTeamMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.team_list = []  # type: ignore[attr-defined]
        request.team = None  # type: ignore[attr-defined]
        if request.user.is_authenticated and not request.path.startswith("/api/"):
            teams = list(teams_of(request.user))
            wanted = request.session.get("team_id")
            chosen = [team for team in teams if team.pk == wanted]
            request.team_list = teams  # type: ignore[attr-defined]
            request.team = (chosen or teams or [None])[0]  # type: ignore[attr-defined]
        return self.get_response(request)
