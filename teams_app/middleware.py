"""What every browser request carries: the team it works in (chosen with the team switcher
and kept in the session; the API names teams explicitly, so its requests skip this query),
and the hold on a login made with a one-time password."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from teams_app.selectors import must_change_password, teams_of


class CurrentTeamMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.team_list = []  # type: ignore[attr-defined]
        request.team = None  # type: ignore[attr-defined]
        # The path first: an API request's user is its token's, which resolving the lazy
        # browser user here would only duplicate (a session lookup per call).
        if not request.path.startswith("/api/") and request.user.is_authenticated:
            teams = list(teams_of(request.user))
            wanted = request.session.get("team_id")
            chosen = [team for team in teams if team.pk == wanted]
            request.team_list = teams  # type: ignore[attr-defined]
            request.team = (chosen or teams or [None])[0]  # type: ignore[attr-defined]
        return self.get_response(request)


class OneTimePasswordMiddleware:
    """A user who logged in with a one-time password is sent to change it from every page
    (htmx requests are redirected whole). The API answers the same session 403 instead
    (`BrowserSessionAuth`); bearer tokens are not logins and are not affected."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if self._held(request):
            url = reverse("password_change")
            if request.htmx:  # type: ignore[attr-defined]
                return HttpResponseClientRedirect(url)
            return redirect(url)
        return self.get_response(request)

    def _held(self, request: HttpRequest) -> bool:
        if request.path.startswith("/api/"):  # the API's session auth holds it (403)
            return False
        if request.path in (reverse("password_change"), reverse("login"), reverse("logout")):
            return False
        return must_change_password(request.user)
