"""Session pages: the list, the new-session form, and the session page with its partials.

The transcript is rendered on the server on load; after that it changes only through the
session's websocket (static/horsie-session.js), so the page and the API's live events never
disagree. Sending answers with no entry: the sender's own message arrives like everyone
else's, as a live event. Live entries that need markdown are fetched from `entry_detail`,
so rendering and sanitising markdown stays in one place, on the server.

The state panel (tasks, armed timers, pending questions) follows the same rule: rendered
from `state_json` on load, then replaced by the socket's `state` events. Answering a question
stores the answer and returns only an error (or nothing); the question leaves the panel, for
every watcher at once, when the state event that settles it arrives.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import trigger_client_event

from sessions_app import services
from sessions_app.api import session_json
from sessions_app.forms import SessionForm
from sessions_app.journal import state_json, state_load
from sessions_app.models import Session
from sessions_app.schemas import entry_out
from sessions_app.selectors import access_session, cut_seq, entries_page, sessions_visible

PAGE = 50
LIST_LIMIT = 100
DETAIL = "sessions_app/detail.html"
# Kinds the browser renders itself from a <template>, with textContent; the rest (markdown)
# are fetched from the server already rendered.
CLIENT_KINDS = ("user", "command", "answer", "notice", "tool_result")
# Blank state items, rendered into <template>s the browser fills from `state` events. A blank
# question has one blank option: the browser clones that button once per option.
BLANK_STATE = {
    "task": {"text": "", "status": "pending"},
    "timer": {"id": "", "message": "", "seconds": 0, "due_at": ""},
    "question": {"id": "", "question": "", "options": [""]},
}
NOT_PENDING = "This question is no longer waiting for an answer (someone may have answered it)."


@login_required
@require_GET
def session_list(request: HttpRequest) -> TemplateResponse:
    q = request.GET.get("q", "").strip()
    sessions = sessions_visible(request.user, team=request.team, q=q)[:LIST_LIMIT]  # type: ignore[attr-defined]
    template = "sessions_app/list.html"
    if request.htmx:  # type: ignore[attr-defined]
        template += "#session-list"
    context = {"sessions": sessions, "q": q, "limit": LIST_LIMIT}
    return TemplateResponse(request, template, context)


@login_required
@require_http_methods(["GET", "POST"])
def session_new(request: HttpRequest) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    form = SessionForm(request.POST or None, user=request.user, team=team)
    if request.method == "POST" and form.is_valid():
        try:
            session = services.session_create(
                user=request.user, team=team, fields=form.cleaned_data
            )
        except services.InvalidInput as error:
            form.add_error(None, str(error))
        else:
            return redirect("sessions:detail", session.pk)
    return TemplateResponse(request, "sessions_app/new.html", {"form": form})


@login_required
@require_GET
def session_detail(request: HttpRequest, session_id: int) -> TemplateResponse:
    session = access_session(request.user, session_id)
    return TemplateResponse(request, DETAIL, detail_context(session))


def detail_context(session: Session, **extra: Any) -> dict[str, Any]:
    entries, has_more = page_before(session, None)
    return {
        "session": session,
        "context": session_json(session)["context"],
        "entries": entries,
        "has_more": has_more,
        "last_seq": entries[-1]["seq"] if entries else 0,
        "blanks": [blank_entry(kind) for kind in CLIENT_KINDS],
        "state": state_json(*state_load(session.pk)),
        "blank_state": BLANK_STATE,
        **extra,
    }


def page_before(session: Session, before: int | None) -> tuple[list[dict[str, Any]], bool]:
    """The newest `PAGE` entries before `before` (or the newest of all), oldest first.

    Seqs are dense (1..last_seq, never reused or deleted), so the page starts at a known seq.
    Entries appended after `session` was read are left to the websocket's catch-up.
    """
    end = min(before, session.last_seq + 1) if before is not None else session.last_seq + 1
    after = max(0, end - 1 - PAGE)
    rows, _ = entries_page(session.pk, after=after, before=before, limit=PAGE)
    cut = cut_seq(session.pk)
    return [entry_out(row, cut) for row in rows], after > 0


def blank_entry(kind: str) -> dict[str, Any]:
    """An empty entry of `kind`: rendered into a <template> the browser fills for live entries."""
    return {"seq": "", "kind": kind, "content": "", "data": {}, "author": "", "in_context": True}


@login_required
@require_GET
def entries_earlier(request: HttpRequest, session_id: int) -> HttpResponse:
    session = access_session(request.user, session_id)
    try:
        before = int(request.GET["before"])
    except (KeyError, ValueError):
        return HttpResponseBadRequest("`before` must be an entry's seq.")
    entries, has_more = page_before(session, max(1, before))
    context = {"session": session, "entries": entries, "has_more": has_more}
    return TemplateResponse(request, f"{DETAIL}#earlier", context)


@login_required
@require_GET
def entry_detail(request: HttpRequest, session_id: int, seq: int) -> TemplateResponse:
    session = access_session(request.user, session_id)
    rows, _ = entries_page(session.pk, after=seq - 1, before=seq + 1, limit=1)
    if not rows:
        raise Http404("No such entry.")
    entry = entry_out(rows[0], cut_seq(session.pk))
    return TemplateResponse(request, f"{DETAIL}#entry", {"session": session, "entry": entry})


@login_required
@require_GET
def context_meter(request: HttpRequest, session_id: int) -> TemplateResponse:
    session = access_session(request.user, session_id)
    context = {"session": session, "context": session_json(session)["context"]}
    return TemplateResponse(request, f"{DETAIL}#meter", context)


@login_required
@require_POST
def message_send(request: HttpRequest, session_id: int) -> HttpResponse:
    """Store the input (the same rules and errors as the API); the transcript shows it live."""
    session = access_session(request.user, session_id)
    text = request.POST.get("text", "").replace("\r\n", "\n")  # forms send CRLF; the API, LF
    try:
        services.message_post(session=session, user=request.user, text=text)
    except services.InputTooLarge as error:
        return send_refused(request, session, text, str(error), status=413)
    except services.InvalidInput as error:
        return send_refused(request, session, text, str(error), status=400)
    if not request.htmx:  # type: ignore[attr-defined]
        return redirect("sessions:detail", session.pk)
    response = TemplateResponse(request, f"{DETAIL}#composer-error", {"error": ""})
    return trigger_client_event(response, "horsie:sent")


def send_refused(
    request: HttpRequest, session: Session, text: str, error: str, *, status: int
) -> TemplateResponse:
    if request.htmx:  # type: ignore[attr-defined]
        return TemplateResponse(
            request, f"{DETAIL}#composer-error", {"error": error}, status=status
        )
    context = detail_context(session, error=error, draft=text)
    return TemplateResponse(request, DETAIL, context, status=status)


@login_required
@require_POST
def answer_send(request: HttpRequest, session_id: int) -> HttpResponse:
    """Answer a pending question; it leaves every watcher's panel with the next state event."""
    session = access_session(request.user, session_id)
    question = request.POST.get("question", "")
    text = request.POST.get("text", "").replace("\r\n", "\n")
    try:
        services.answer_post(session=session, user=request.user, question=question, text=text)
    except services.InputTooLarge as error:
        return answer_refused(request, session, question, str(error), status=413)
    except services.InvalidInput as error:
        return answer_refused(request, session, question, str(error), status=400)
    except services.NotPending:
        return answer_refused(request, session, question, NOT_PENDING, status=409)
    if not request.htmx:  # type: ignore[attr-defined]
        return redirect("sessions:detail", session.pk)
    return TemplateResponse(request, f"{DETAIL}#answer-error", {"answer_error": None})


def answer_refused(
    request: HttpRequest, session: Session, question: str, error: str, *, status: int
) -> TemplateResponse:
    answer_error = {"question": question, "error": error}
    if request.htmx:  # type: ignore[attr-defined]
        context = {"answer_error": answer_error, "question": {"id": question}}
        return TemplateResponse(request, f"{DETAIL}#answer-error", context, status=status)
    context = detail_context(session, answer_error=answer_error)
    return TemplateResponse(request, DETAIL, context, status=status)
