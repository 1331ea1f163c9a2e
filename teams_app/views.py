"""Team pages: the switcher, the team page (members, roles, invitations, provider keys), the
invitation link, and the password change a one-time password leads to.

The team page works on the team the browser is in (`CurrentTeamMiddleware`). Every write goes
through `require_admin` before its service, exactly as the API does; a refused change (the
last admin, a taken name) answers 400 with the section re-rendered around its error, which
htmx swaps in place. A provider key's value is taken and never rendered back.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import PasswordChangeView
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse, reverse_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from horsie_site.inputs import ID_MAX, bounded_int
from teams_app import selectors, services
from teams_app.forms import ProviderKeyForm, RoleForm, SignupForm
from teams_app.models import Team
from teams_app.selectors import teams_of

PAGE = "teams_app/team.html"
JOIN = "teams_app/join.html"


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


def current_team(request: HttpRequest) -> Team:
    team: Team | None = request.team  # type: ignore[attr-defined]
    if team is None:
        raise Http404("You belong to no team.")
    return team


def team_page(
    request: HttpRequest, section: str | None = None, status: int = 200, **extra: Any
) -> TemplateResponse:
    """The page, or one section of it for htmx."""
    team = current_team(request)
    admin = selectors.is_admin(request.user, team)
    context = {
        "team": team,
        "is_admin": admin,
        "members": selectors.memberships_of(team),
        "keys": selectors.provider_keys_of(team) if admin else [],
        "roles": ["admin", "member"],
        "key_form": ProviderKeyForm(),
        **extra,
    }
    template = f"{PAGE}#{section}" if section and request.htmx else PAGE  # type: ignore[attr-defined]
    return TemplateResponse(request, template, context, status=status)


@login_required
@require_GET
def team_detail(request: HttpRequest) -> TemplateResponse:
    return team_page(request)


@login_required
@require_POST
def member_role(request: HttpRequest, user_id: int) -> TemplateResponse:
    team = current_team(request)
    membership = selectors.access_membership(request.user, team, user_id)
    selectors.require_admin(request.user, team)
    form = RoleForm(request.POST)
    if not form.is_valid():
        return team_page(request, "members", 400, members_error="Choose admin or member.")
    try:
        services.membership_set_role(membership=membership, role=form.cleaned_data["role"])
    except services.TeamError as error:
        return team_page(request, "members", 400, members_error=str(error))
    return team_page(request, "members")


@login_required
@require_POST
def member_remove(request: HttpRequest, user_id: int) -> TemplateResponse:
    team = current_team(request)
    membership = selectors.access_membership(request.user, team, user_id)
    selectors.require_admin(request.user, team)
    try:
        services.membership_remove(membership=membership)
    except services.TeamError as error:
        return team_page(request, "members", 400, members_error=str(error))
    return team_page(request, "members")


@login_required
@require_POST
def invitation_new(request: HttpRequest) -> TemplateResponse:
    team = current_team(request)
    selectors.require_admin(request.user, team)
    form = RoleForm(request.POST)
    role = form.cleaned_data["role"] if form.is_valid() else "member"
    invitation, token = services.invitation_create(team=team, user=request.user, role=role)
    url = request.build_absolute_uri(reverse("teams:join", args=[token]))
    return team_page(request, "invite", invitation=invitation, invitation_url=url)


@login_required
@require_POST
def provider_key_new(request: HttpRequest) -> TemplateResponse:
    team = current_team(request)
    selectors.require_admin(request.user, team)
    form = ProviderKeyForm(request.POST)
    if not form.is_valid():
        return team_page(request, "keys", 400, key_form=form)
    try:
        services.provider_key_create(team=team, user=request.user, **form.cleaned_data)
    except services.TeamError as error:
        return team_page(request, "keys", 400, keys_error=str(error))
    return team_page(request, "keys")


@login_required
@require_POST
def provider_key_remove(request: HttpRequest, key_id: int) -> TemplateResponse:
    key = selectors.access_provider_key(request.user, key_id)
    selectors.require_admin(request.user, key.team)
    try:
        services.provider_key_delete(key=key)
    except services.TeamError as error:
        return team_page(request, "keys", 400, keys_error=str(error))
    return team_page(request, "keys")


@require_http_methods(["GET", "POST"])
def invitation_join(request: HttpRequest, token: str) -> HttpResponse:
    """A logged-in user joins with one click; anyone else makes an account here."""
    invitation = selectors.invitation_open(token)
    user: Any = request.user
    form = None if user.is_authenticated else SignupForm(request.POST or None)
    if request.method == "POST":
        try:
            if form is None:
                services.invitation_accept(invitation=invitation, user=user)
            elif form.is_valid():
                user = services.invitation_signup(
                    invitation=invitation,
                    username=form.cleaned_data["username"],
                    password=form.cleaned_data["password1"],
                )
                login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            else:
                return join_page(request, invitation, form, status=400)
        except services.TeamError as error:
            return join_page(request, invitation, form, status=400, error=str(error))
        request.session["team_id"] = invitation.team_id
        return redirect("sessions:list")
    return join_page(request, invitation, form)


def join_page(
    request: HttpRequest, invitation: Any, form: Any, status: int = 200, error: str = ""
) -> TemplateResponse:
    member = selectors.role_of(request.user, invitation.team) is not None
    context = {"invitation": invitation, "form": form, "error": error, "already": member}
    return TemplateResponse(request, JOIN, context, status=status)


class PasswordChange(PasswordChangeView):
    """Django's form; a one-time password is spent once it is replaced."""

    success_url = reverse_lazy("sessions:list")

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        must_change = selectors.must_change_password(self.request.user)
        return {**super().get_context_data(**kwargs), "must_change": must_change}

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        services.password_changed(user=form.user)
        return response
