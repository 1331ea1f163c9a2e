"""The team switcher: which of the user's teams the browser works in, kept in its session.

`CurrentTeamMiddleware` reads `team_id` back on every request; a team the user is not in is
refused with 404 here, and would be ignored there anyway.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from teams_app.models import Team
from teams_app.selectors import teams_of


@login_required
@require_POST
def team_switch(request: HttpRequest) -> HttpResponse:
    try:
        team = teams_of(request.user).get(pk=int(request.POST.get("team", "")))
    except (ValueError, Team.DoesNotExist):
        raise Http404("No such team.") from None
    request.session["team_id"] = team.pk
    url = reverse("sessions:list")
    if request.htmx:  # type: ignore[attr-defined]
        return HttpResponseClientRedirect(url)
    return redirect(url)
