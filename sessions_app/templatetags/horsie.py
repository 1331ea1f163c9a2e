"""Template helpers for the browser UI: markdown that can never run, and small formatters.

Whatever a model or a person writes is rendered by markdown-it with raw HTML off, then
sanitised by nh3 with a short allow-list (no `img`, only http/https/mailto links), so even
a renderer bug cannot let a `<script>`, an event handler or a `javascript:` URL through.
Images become plain links: an agent UI that loads any image a model names leaks the
conversation through the image URL. Live entries fetch this same rendering from the server,
so it stays in one place.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import nh3
from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince
from markdown_it import MarkdownIt

from sessions_app.leases import status_of
from sessions_app.selectors import sessions_visible
from sessions_app.usage import call_cost as usage_cost

register = template.Library()

TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "code",
    "pre", "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"style"}, "td": {"style"}}
URL_SCHEMES = {"http", "https", "mailto"}


def image_as_link(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env)
    src = str(token.attrGet("src") or "")
    return str(format_html('<a href="{}">{}</a>', src, alt or src))


def make_markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.add_render_rule("image", image_as_link)
    return md


MARKDOWN = make_markdown()


def render_markdown(text: str) -> str:
    return nh3.clean(
        MARKDOWN.render(text or ""),
        tags=TAGS,
        attributes=ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        filter_style_properties={"text-align"},
        link_rel="noopener noreferrer nofollow",
    )


@register.filter
def markdown(text: str) -> SafeString:
    return mark_safe(render_markdown(text))  # noqa: S308 sanitised by nh3 just above


@register.filter
def as_datetime(value: Any) -> datetime | None:
    """Entries carry ISO strings (the API's shape); templates want datetimes."""
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return None


@register.filter
def ago(moment: datetime) -> str:
    if timezone.now() - moment < timedelta(minutes=1):
        return "just now"
    return f"{timesince(moment)} ago"


@register.filter
def percent(part: int | None, whole: int | None) -> int:
    if not part or not whole:
        return 0
    return min(100, round(100 * part / whole))


@register.simple_tag(takes_context=True)
def recent_sessions(context: template.Context, limit: int = 8) -> list[Any]:
    """The sidebar's most recent sessions of the team the browser is working in."""
    request = context.get("request")
    team = getattr(request, "team", None)
    if request is None or team is None:
        return []
    return list(sessions_visible(request.user, team=team)[:limit])


@register.filter
def status(session: Any) -> str:
    """The status to show: a session whose runner died shows idle, not running."""
    return status_of(session)


@register.filter
def thousands(value: int | None) -> str:
    """`1,234`; a dash for a missing number (a template's missing variable arrives as "")."""
    return f"{value:,}" if isinstance(value, int | float) else "—"


TASK_STATUSES = {"pending": "pending", "in_progress": "in progress", "done": "done"}


@register.filter
def task_status(status: str) -> str:
    return TASK_STATUSES.get(status, status)


@register.filter
def countdown(due_at: str) -> str:
    """Time left until an ISO moment, as the timer panel shows it (`in 9:59`, `due`).

    The browser recounts it every second; this is what the page shows before its script runs.
    """
    due = as_datetime(due_at)
    if due is None:
        return ""
    if timezone.is_naive(due):
        due = due.replace(tzinfo=UTC)
    left = math.ceil((due - timezone.now()).total_seconds())
    if left <= 0:
        return "due"
    days, rest = divmod(left, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    clock = f"{hours}:{minutes:02}:{seconds:02}" if hours or days else f"{minutes}:{seconds:02}"
    return f"in {days}d {clock}" if days else f"in {clock}"


@register.filter
def call_cost(usage: Any, prices: Any) -> float | None:
    """One call's cost at the card's prices (None when either is unknown)."""
    return usage_cost(usage if isinstance(usage, dict) else None, prices)


@register.filter
def dollars(value: float | None) -> str:
    """A cost in US dollars: cents for large sums, four significant places for small ones."""
    if value is None:
        return "—"
    if value >= 1:
        return f"${value:,.2f}"
    return f"${value:.4f}" if value >= 0.0001 else f"${value:.2g}" if value else "$0"


@register.filter
def cached_share(counts: Any) -> int:
    """The share of input tokens read from the provider's cache, in percent."""
    if not isinstance(counts, dict) or not counts.get("input_tokens"):
        return 0
    return round(100 * int(counts.get("cached_tokens") or 0) / int(counts["input_tokens"]))


@register.filter
def truncated(data: Any) -> bool:
    """A reply the output limit cut short (OpenAI says `length`, Anthropic `max_tokens`)."""
    return isinstance(data, dict) and data.get("finish_reason") in ("length", "max_tokens")


@register.filter
def lineage(session: Any) -> dict[str, str]:
    """How a session came to be, for the sidebar and the session list."""
    parent = str(session.parent) if session.parent_id else "a deleted session"
    if session.kind == "subagent":
        return {"code": "subagent", "label": f"subagent of {parent}"}
    if session.kind != "fork":
        return {"code": "main", "label": "new session"}
    if session.branch == "rewind":
        return {"code": "rewind", "label": f"rewind of {parent} at #{session.parent_seq}"}
    if session.branch == "handoff":
        return {"code": "handoff", "label": f"handoff from {parent}"}
    return {"code": "fork", "label": f"fork of {parent}"}
