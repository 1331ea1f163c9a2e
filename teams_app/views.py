"""The team switcher: which of the user's teams the browser works in, kept in its session.

`CurrentTeamMiddleware` reads `team_id` back on every request; a team the user is not in is
refused with 404 here, and would be ignored there anyway.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from horsie_site.inputs import ID_MAX, bounded_int
from teams_app.models import Team
from teams_app.selectors import teams_of


@login_required
@require_POST
def team_switch(request: HttpRequest) -> HttpResponse:
    team_id = bounded_int(request.POST.get("team"), high=ID_MAX)
    if team_id is None:
        return HttpResponseBadRequest("`team` must be a team's id.")
    try:
        team = teams_of(request.user).get(pk=team_id)
    except Team.DoesNotExist:
        raise Http404("No such team.") from None
    request.session["team_id"] = team.pk
    url = reverse("sessions:list")
    if request.htmx:  # type: ignore[attr-defined]
        return HttpResponseClientRedirect(url)
    return redirect(url)
