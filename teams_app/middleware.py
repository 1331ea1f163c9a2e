"""The team the browser is working in, chosen with the team switcher and kept in the session."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from teams_app.selectors import teams_of


class CurrentTeamMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.team = None  # type: ignore[attr-defined]
        if request.user.is_authenticated:
            teams = teams_of(request.user)
            wanted = request.session.get("team_id")
            request.team = (teams.filter(pk=wanted).first() if wanted else None) or teams.first()  # type: ignore[attr-defined]
        return self.get_response(request)
