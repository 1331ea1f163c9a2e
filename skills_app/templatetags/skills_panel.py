"""`{% skills_panel session %}`: the session panel's skills and bundles form, in its own
template, so the session page includes it with one line."""

from __future__ import annotations

from typing import Any

from django import template

from skills_app.panels import skills_panel as panel_context

register = template.Library()


@register.inclusion_tag("skills_app/_skills_panel.html", takes_context=True)
def skills_panel(context: Any, session: Any) -> dict[str, Any]:
    request = context["request"]
    return {
        **panel_context(session, request.user),
        "request": request,
        "csrf_token": context.get("csrf_token"),
    }
