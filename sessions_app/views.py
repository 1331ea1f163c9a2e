from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest
from django.template.response import TemplateResponse


@login_required
def session_list(request: HttpRequest) -> TemplateResponse:
    return TemplateResponse(request, "sessions_app/list.html", {})
