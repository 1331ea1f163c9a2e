"""Session pages: the list, the new-session form, and the session page with its partials.

The transcript is rendered on the server on load; after that it changes only through the
session's UI websocket (`ui_consumer`), which renders the same partials as `hx-swap-oob`
fragments, so the page and a live update never render anything two ways. Sending answers
with no entry: the sender's own message arrives like everyone else's, as a live event.

The state panel (tasks, armed timers, pending questions) follows the same rule: rendered
from `state_json` on load, then re-rendered for each of the socket's `state` events. Answering a question
stores the answer and returns only an error (or nothing); the question leaves the panel, for
every watcher at once, when the state event that settles it arrives.

Compaction is shown where it happened: each boundary is a card in the transcript, entries
before the latest cut are marked as no longer sent, and an edited summary shows its diff.
Editing a summary, forking, rewinding and starting from a handoff call the same `branching`
functions as the API; the ones that make a new session send the browser there (HX-Redirect
for htmx). A refused form answers with its error only, shown where it was typed.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect, trigger_client_event

from harness.state import token_count
from horsie_site.inputs import SEQ_MAX, bounded_int
from memory_app import panels
from memory_app.selectors import SelectionRefused
from sessions_app import api, branching, services, stores, usage
from sessions_app.api import session_json
from sessions_app.commands import registry_of
from sessions_app.events import compacting_since
from sessions_app.forms import SessionForm
from sessions_app.journal import state_json, state_load
from sessions_app.leases import status_of
from sessions_app.models import LOCAL_NOTE, AgentPreset, Entry, Session
from sessions_app.schemas import entry_out
from sessions_app.selectors import (
    access_preset,
    access_session,
    entries_page,
    model_cards_visible,
    sessions_visible,
)
from sessions_app.templatetags.compaction import line_diff, prompt_chart

PAGE = 50
LIST_LIMIT = 100
DETAIL = "sessions_app/detail.html"
NEW = "sessions_app/new.html"
NOT_PENDING = "This question is no longer waiting for an answer (someone may have answered it)."
NOT_LATEST = "A newer summary exists: edit that one instead."
CHART_CALLS = 2000  # the chart shows at most the last this many model calls
# A refused branching form: its status, by the error the service raised.
REFUSED = {services.InputTooLarge: 413, services.InvalidInput: 400, branching.NotLatest: 409}


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
    """The form; `?preset=` fills it from a preset of the team (another team's is 404)."""
    team = request.team  # type: ignore[attr-defined]
    preset = preset_chosen(request, team)
    form = SessionForm(request.POST or None, user=request.user, team=team, preset=preset)
    if request.method == "POST" and form.is_valid():
        try:
            session = services.session_create(
                user=request.user, team=team, fields=form.cleaned_data
            )
        except services.InvalidInput as error:
            form.add_error(None, str(error))
        else:
            return redirect("sessions:detail", session.pk)
    cost = memory_cost_of(request, request.POST or preset_selection(form, preset))
    context = {"form": form, "cost": cost, "local_note": LOCAL_NOTE}
    template = f"{NEW}#session-form" if request.htmx else NEW  # type: ignore[attr-defined]
    return TemplateResponse(request, template, context)


def preset_chosen(request: HttpRequest, team: Any) -> AgentPreset | None:
    chosen = request.GET.get("preset", "")
    if request.method != "GET" or not chosen:
        return None
    preset = access_preset(request.user, chosen)
    if team is None or preset.team_id != team.pk:
        raise Http404("No such preset.")
    return preset


def preset_selection(form: SessionForm, preset: AgentPreset | None) -> dict[str, Any]:
    """The filled form's model and memory, as the cost partial reads a posted form."""
    if preset is None:
        return {}
    data = {
        name: field.initial for name, field in form.fields.items() if name.startswith("memory_")
    }
    return {**data, "model": str(form.fields["model"].initial or "")}


@login_required
@require_GET
def session_new_cost(request: HttpRequest) -> TemplateResponse:
    """What the new-session form's memory selection costs, against the chosen card's window."""
    return TemplateResponse(
        request, f"{NEW}#memory-cost", {"cost": memory_cost_of(request, request.GET)}
    )


def memory_cost_of(request: HttpRequest, data: Any) -> dict[str, Any]:
    team = request.team  # type: ignore[attr-defined]
    cards = model_cards_visible(request.user, team=team)
    chosen = bounded_int(data.get("model"), low=1, high=SEQ_MAX)
    card = cards.filter(pk=chosen).first() if chosen else cards.first()
    window = card.context_window if card is not None else None
    cost = panels.selection_cost(user=request.user, team=team, data=data, window=window)
    return {**cost, "card": card}


@login_required
@require_GET
def session_detail(request: HttpRequest, session_id: int) -> TemplateResponse:
    session = access_session(request.user, session_id)
    team_follow(request, session)
    return TemplateResponse(request, DETAIL, detail_context(session, request.user))


def team_follow(request: HttpRequest, session: Session) -> None:
    """Opening a session of another of the user's teams switches to that team, so the
    switcher, the sidebar and the next new session are that team's."""
    current = request.team  # type: ignore[attr-defined]
    if current is not None and current.pk == session.team_id:
        return
    request.session["team_id"] = session.team_id
    request.team = session.team  # type: ignore[attr-defined]


def detail_context(session: Session, user: Any, **extra: Any) -> dict[str, Any]:
    marks = transcript_marks(session.pk)
    entries, has_more = page_before(session, None, marks)
    view = stores.session_view(session)
    detail = session_json(session, view)
    meter = detail["context"]
    return {
        "session": session,
        "memory": panels.session_panel(session, view.memory, user),
        "status": status_of(session),
        "context": meter,
        "usage": detail["usage"],
        "usage_total": usage.overall(detail["usage"]),
        "failure": failure_of(session, detail["last_error"]),
        "compacting_since": compacting_since(session.pk),
        "marks": marks,
        "chart": chart_of(session, meter),
        "entries": entries,
        "has_more": has_more,
        "last_seq": entries[-1]["seq"] if entries else 0,
        "state": state_json(*state_load(session.pk)),
        **extra,
    }


def transcript_marks(session_id: int) -> dict[str, int | None]:
    """Where the latest cut falls (1 before any compaction) and which boundary is latest."""
    latest = (
        Entry.objects.filter(session_id=session_id, kind="boundary")
        .order_by("-seq")
        .values_list("seq", "data__first_kept_seq")
        .first()
    )
    if latest is None:
        return {"cut": 1, "latest": None}
    return {"cut": int(latest[1] or 1), "latest": latest[0]}


def page_before(
    session: Session, before: int | None, marks: dict[str, int | None]
) -> tuple[list[dict[str, Any]], bool]:
    """The newest `PAGE` entries before `before` (or the newest of all), oldest first.

    Seqs are dense (1..last_seq, never reused or deleted), so the page starts at a known seq.
    Entries appended after `session` was read are left to the websocket's catch-up.
    """
    end = min(before, session.last_seq + 1) if before is not None else session.last_seq + 1
    after = max(0, end - 1 - PAGE)
    rows, _ = entries_page(session.pk, after=after, before=before, limit=PAGE)
    return shown(session.pk, rows, marks), after > 0


def shown(session_id: int, rows: list[Entry], marks: dict[str, Any]) -> list[dict[str, Any]]:
    """Entries in the API's shape, plus what the transcript marks: whether each lies before
    the latest cut, which boundary is the latest (only it can be edited), and for an edited
    summary its diff against the version it edits."""
    entries = [entry_out(row, marks["cut"]) for row in rows]
    edited = {
        bounded_int(str(e["data"].get("edited_from")), high=SEQ_MAX)
        for e in entries
        if e["kind"] == "boundary"
    } - {None}
    originals = dict(
        Entry.objects.filter(session_id=session_id, seq__in=edited).values_list("seq", "content")
    )
    for entry in entries:
        entry["before_cut"] = entry["seq"] < marks["cut"]
        if entry["kind"] == "boundary":
            entry["latest"] = entry["seq"] == marks["latest"]
            original = originals.get(entry["data"].get("edited_from"))
            if original is not None:
                entry["diff"] = line_diff(original, entry["content"])
    return entries


def chart_of(session: Session, meter: dict[str, Any]) -> dict[str, Any]:
    """Prompt tokens per model call (the last `CHART_CALLS`), with the compactions marked.

    Reads three values per call, never the entries' whole data."""
    calls = list(
        Entry.objects.filter(session_id=session.pk, kind="assistant")
        .order_by("-seq")
        .values_list("seq", "data__usage__input_tokens", "data__prompt_tokens_estimate")[
            :CHART_CALLS
        ]
    )[::-1]
    first = calls[0][0] if calls else 0
    boundaries = (
        Entry.objects.filter(session_id=session.pk, kind="boundary", seq__gte=first)
        .order_by("seq")
        .values_list("seq", "data__trigger")[:CHART_CALLS]
    )
    return prompt_chart(
        [
            (seq, token_count(reported) or token_count(estimate))
            for seq, reported, estimate in calls
        ],
        list(boundaries),
        window=meter["window"],
        trigger_tokens=meter["trigger_tokens"],
    )


@login_required
@require_GET
def entries_earlier(request: HttpRequest, session_id: int) -> HttpResponse:
    session = access_session(request.user, session_id)
    before = bounded_int(request.GET.get("before"), high=SEQ_MAX)
    if before is None:
        return HttpResponseBadRequest("`before` must be an entry's seq.")
    entries, has_more = page_before(session, max(1, before), transcript_marks(session.pk))
    context = {"session": session, "entries": entries, "has_more": has_more}
    return TemplateResponse(request, f"{DETAIL}#earlier", context)


@login_required
@require_GET
def entry_detail(request: HttpRequest, session_id: int, seq: int) -> TemplateResponse:
    session = access_session(request.user, session_id)
    rows, _ = entries_page(session.pk, after=seq - 1, before=seq + 1, limit=1)
    if not rows:
        raise Http404("No such entry.")
    (entry,) = shown(session.pk, rows, transcript_marks(session.pk))
    return TemplateResponse(request, f"{DETAIL}#entry", {"session": session, "entry": entry})


@login_required
@require_GET
def context_meter(request: HttpRequest, session_id: int) -> TemplateResponse:
    session = access_session(request.user, session_id)
    view = stores.session_view(session)
    detail = session_json(session, view)
    failure = failure_of(session, detail["last_error"])
    memory = panels.session_panel(session, view.memory, request.user)
    context = {
        "session": session,
        "context": detail["context"],
        "usage": detail["usage"],
        "usage_total": usage.overall(detail["usage"]),
        "failure": failure,
        "memory": memory,
    }
    return TemplateResponse(request, f"{DETAIL}#meter-refresh", context)


@login_required
@require_GET
def command_complete(request: HttpRequest, session_id: int) -> TemplateResponse:
    """The slash commands the composer's text starts, while it is a bare `/name`."""
    session = access_session(request.user, session_id)
    typed = request.GET.get("text", "")
    completions: list[dict[str, str]] = []
    if typed.startswith("/") and not any(c.isspace() for c in typed):
        completions = [
            c for c in registry_of(session).completions() if c["name"].startswith(typed[1:])
        ]
    context = {"completions": completions}
    return TemplateResponse(request, f"{DETAIL}#composer-complete", context)


@login_required
@require_POST
def memory_change(request: HttpRequest, session_id: int) -> HttpResponse:
    """Switch a space off, between read and write, or add one: the same check and service
    as `PATCH /sessions/{id}`, so the change is a notice and applies from the next call."""
    session = access_session(request.user, session_id)
    error, status = "", 200
    try:
        panels.session_selection_change(session=session, user=request.user, data=request.POST)
    except SelectionRefused as refused:
        error, status = str(refused), 400
    if not request.htmx and not error:  # type: ignore[attr-defined]
        return redirect("sessions:detail", session.pk)
    session.refresh_from_db()
    view = stores.session_view(session)
    memory = panels.session_panel(session, view.memory, request.user, error=error)
    context = {"session": session, "memory": memory}
    template = f"{DETAIL}#memory-panel" if request.htmx else DETAIL  # type: ignore[attr-defined]
    if not request.htmx:  # type: ignore[attr-defined]
        context = detail_context(session, request.user, memory=memory)
    return TemplateResponse(request, template, context, status=status)


def failure_of(session: Session, last_error: dict[str, Any] | None) -> dict[str, Any] | None:
    """The banner's facts: what failed, and the last good reply before it, the point a
    rewind goes back to (every entry after it belongs to the failing turns). None: no
    failure, or no good reply to go back to, so no rewind is offered."""
    if last_error is None:
        return None
    good = (
        Entry.objects.filter(session_id=session.pk, kind="assistant", seq__lt=last_error["seq"])
        .order_by("-seq")
        .values_list("seq", flat=True)
        .first()
    )
    return {**last_error, "rewind_seq": good}


@login_required
@require_POST
def message_send(request: HttpRequest, session_id: int) -> HttpResponse:
    """Store the input (the same rules and errors as the API); the transcript shows it live."""
    session = access_session(request.user, session_id)
    text = request.POST.get("text", "").replace("\r\n", "\n")  # forms send CRLF; the API, LF
    try:
        posted = services.message_post(session=session, user=request.user, text=text)
    except services.InputTooLarge as error:
        return send_refused(request, session, text, str(error), status=413)
    except services.InvalidInput as error:
        return send_refused(request, session, text, str(error), status=400)
    if posted.session is not None:  # /summary-n-fork or /rewind made a new session
        return go_to(request, posted.session)
    if posted.help is not None and not request.htmx:  # type: ignore[attr-defined]
        return TemplateResponse(request, DETAIL, detail_context(session, help=posted.help))
    if not request.htmx:  # type: ignore[attr-defined]
        return redirect("sessions:detail", session.pk)
    response = TemplateResponse(
        request, f"{DETAIL}#composer-error", {"error": "", "help": posted.help}
    )
    return trigger_client_event(response, "horsie:sent")


def send_refused(
    request: HttpRequest, session: Session, text: str, error: str, *, status: int
) -> TemplateResponse:
    if request.htmx:  # type: ignore[attr-defined]
        return TemplateResponse(
            request, f"{DETAIL}#composer-error", {"error": error}, status=status
        )
    context = detail_context(session, request.user, error=error, draft=text)
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
    context = detail_context(session, request.user, answer_error=answer_error)
    return TemplateResponse(request, DETAIL, context, status=status)


# Compaction and branching ---------------------------------------------------------------


@login_required
@require_GET
def context_chart(request: HttpRequest, session_id: int) -> TemplateResponse:
    session = access_session(request.user, session_id)
    chart = chart_of(session, session_json(session)["context"])
    return TemplateResponse(request, f"{DETAIL}#chart", {"session": session, "chart": chart})


@login_required
@require_GET
def context_view(request: HttpRequest, session_id: int) -> TemplateResponse:
    """What the model is sent next, block by block: the API's `GET /context`, as a partial."""
    session = access_session(request.user, session_id)
    model_context = api.context_json(session)
    context = {"session": session, "model_context": model_context}
    return TemplateResponse(request, f"{DETAIL}#context-view", context)


@login_required
@require_POST
def summary_save(request: HttpRequest, session_id: int) -> HttpResponse:
    """Edit the latest summary: a new `edit` boundary, which every watcher sees arrive."""
    session = access_session(request.user, session_id)
    summary = posted_text(request, "summary")
    boundary = posted_seq(request, "boundary")
    failed = {"form": "summary", "key": boundary, "text": summary}
    try:
        if boundary is None:
            raise services.InvalidInput("Which summary? `boundary` must be an entry's seq.")
        branching.summary_edit(
            session=session,
            user=request.user,
            boundary_seq=boundary,
            summary=summary,
            pin=request.POST.get("pin") == "on",
        )
    except tuple(REFUSED) as error:
        return form_refused(request, session, failed, error)
    if not request.htmx:  # type: ignore[attr-defined]
        return redirect("sessions:detail", session.pk)
    return TemplateResponse(request, f"{DETAIL}#form-error", {"failed": None})


@login_required
@require_POST
def fork_start(request: HttpRequest, session_id: int) -> HttpResponse:
    """A new session from this one, which stays as it was: from a summary its runner writes,
    or, with `document`, from a handoff document a person edited. The browser goes there."""
    parent = access_session(request.user, session_id)
    document = request.POST.get("document")
    if document is not None:
        document = document.replace("\r\n", "\n")
    form = "fork" if document is None else "handoff"
    failed = {"form": form, "key": posted_seq(request, "notice"), "text": document}
    try:
        child = branching.session_fork(parent=parent, user=request.user, document=document)
    except tuple(REFUSED) as error:
        return form_refused(request, parent, failed, error)
    return go_to(request, child.pk)


@login_required
@require_POST
def rewind_start(request: HttpRequest, session_id: int) -> HttpResponse:
    """A new session holding this one's history up to an entry, then an optional message."""
    parent = access_session(request.user, session_id)
    text = posted_text(request, "text")
    seq = posted_seq(request, "seq")
    failed = {"form": "rewind", "key": seq, "text": text}
    try:
        if seq is None:
            raise services.InvalidInput("Rewind to which entry? `seq` must be an entry's seq.")
        child = branching.session_rewind(
            parent=parent, user=request.user, seq=seq, text=text if text.strip() else None
        )
    except tuple(REFUSED) as error:
        return form_refused(request, parent, failed, error)
    return go_to(request, child.pk)


def posted_text(request: HttpRequest, name: str) -> str:
    return request.POST.get(name, "").replace("\r\n", "\n")  # forms send CRLF; the API, LF


def posted_seq(request: HttpRequest, name: str) -> int | None:
    return bounded_int(request.POST.get(name), low=1, high=SEQ_MAX)


def go_to(request: HttpRequest, session_id: int) -> HttpResponse:
    url = reverse("sessions:detail", args=[session_id])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)  # type: ignore[attr-defined]


def form_refused(
    request: HttpRequest, session: Session, failed: dict[str, Any], error: Exception
) -> TemplateResponse:
    """The error where the form was: alone for htmx, else on the whole page, with the text."""
    status = next(code for kind, code in REFUSED.items() if isinstance(error, kind))
    failed = {**failed, "error": NOT_LATEST if status == 409 else str(error)}
    if request.htmx:  # type: ignore[attr-defined]
        context = {"failed": failed, "form": failed["form"], "key": failed["key"]}
        return TemplateResponse(request, f"{DETAIL}#form-error", context, status=status)
    context = detail_context(session, request.user, failed=failed)
    return TemplateResponse(request, DETAIL, context, status=status)
