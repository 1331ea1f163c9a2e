"""`/api/v1/models`, `/presets` and `/sessions`: parse, check access, call a service, shape."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from django.db import transaction
from django.db.models import ProtectedError
from django.http import HttpRequest
from ninja import Query, Router, Status
from ninja.errors import HttpError

from harness.runtime import SessionView
from horsie_site import wiring
from horsie_site.inputs import SEQ_MAX
from memory_app import services as memory_services
from sessions_app import branching, cards, presets, selectors, services, stores, usage
from sessions_app.commands import registry_of
from sessions_app.journal import state_json, state_load
from sessions_app.models import ModelCard, Session
from sessions_app.schemas import (
    AnswerIn,
    CompactIn,
    CompletionOut,
    ContextOut,
    Detail,
    EntriesOut,
    ForkIn,
    MessageIn,
    ModelCardIn,
    ModelCardOut,
    ModelCardPatch,
    PresetIn,
    PresetOut,
    PresetPatch,
    RewindIn,
    SessionIn,
    SessionPatch,
    StateOut,
    SummaryEditIn,
    context_meter,
    entries_out,
    entries_since_out,
    entry_out,
    session_out,
)
from sessions_app.waiting import settled_status
from skills_app import panels as skills_panels
from teams_app.models import Team
from teams_app.selectors import team_for_create

router = Router()


@contextlib.contextmanager
def refused_as_http() -> Iterator[None]:
    """A service's refusal (bad input, too large, a conflict) as its HTTP code."""
    try:
        yield
    except services.ServiceError as error:
        raise HttpError(error.status, str(error)) from None


ERRORS = {400: Detail, 403: Detail, 404: Detail, 409: Detail, 413: Detail, 422: Detail}


# Model cards ---------------------------------------------------------------------------


@router.get("/models", response={200: list[ModelCardOut], **ERRORS}, tags=["models"])
def model_list(request: HttpRequest) -> Any:
    return selectors.model_cards_visible(request.user).select_related("team", "endpoint_changed_by")


@router.post("/models", response={201: ModelCardOut, **ERRORS}, tags=["models"])
def model_create(request: HttpRequest, payload: ModelCardIn) -> Any:
    """Setting `base_url`, `key` or `api_key_env` is for team admins (403 otherwise)."""
    team = team_for_create(request.user, payload.team)
    with refused_as_http():
        card = cards.model_card_create(
            user=request.user, team=team, fields=payload.dict(exclude={"team"})
        )
    return Status(201, card)


@router.get("/models/{card_id}", response={200: ModelCardOut, **ERRORS}, tags=["models"])
def model_get(request: HttpRequest, card_id: int) -> Any:
    return selectors.access_model_card(request.user, card_id)


@router.patch("/models/{card_id}", response={200: ModelCardOut, **ERRORS}, tags=["models"])
def model_patch(request: HttpRequest, card_id: int, payload: ModelCardPatch) -> Any:
    """Changing `base_url`, `key` or `api_key_env` is for team admins, and is recorded."""
    card = selectors.access_model_card(request.user, card_id)
    with refused_as_http():
        return cards.model_card_update(
            user=request.user, card=card, fields=payload.dict(exclude_unset=True)
        )


@router.delete("/models/{card_id}", response={204: None, **ERRORS}, tags=["models"])
def model_delete(request: HttpRequest, card_id: int) -> Any:
    card = selectors.access_model_card(request.user, card_id)
    try:
        card.delete()
    except ProtectedError:
        raise HttpError(409, "Sessions or presets still use this model card.") from None
    return Status(204, None)


@router.get("/team/usage", response={200: dict, **ERRORS}, tags=["models"])
def team_usage(request: HttpRequest, team: str | None = Query(None, max_length=100)) -> Any:
    """Tokens and cost of the team's model calls, the agent's apart from the harness's
    (summaries), in all and per model card. Any member may read it."""
    return usage.team_usage(team_for_create(request.user, team))


# Presets -------------------------------------------------------------------------------


def card_in_team(user: Any, card_id: int | None, team: Team) -> ModelCard | None:
    if card_id is None:
        return None
    card = selectors.access_model_card(user, card_id)
    if card.team_id != team.pk:
        raise HttpError(400, f"Model card {card_id} belongs to another team.")
    return card


def selections_check(
    fields: dict[str, Any], *, user: Any, team: Team, current: list[Any] | None = None
) -> None:
    """`presets.selections_check`, refused as a 400."""
    with refused_as_http():
        presets.selections_check(fields, user=user, team=team, current=current)


@router.get("/presets", response={200: list[PresetOut], **ERRORS}, tags=["presets"])
def preset_list(request: HttpRequest) -> Any:
    return selectors.presets_visible(request.user).select_related("team")


@router.post("/presets", response={201: PresetOut, **ERRORS}, tags=["presets"])
def preset_create(request: HttpRequest, payload: PresetIn) -> Any:
    team = team_for_create(request.user, payload.team)
    fields = payload.dict(exclude={"team"}, exclude_none=True)
    fields["model"] = card_in_team(request.user, payload.model, team)
    with refused_as_http():
        preset = presets.preset_create(user=request.user, team=team, fields=fields)
    return Status(201, preset)


@router.get("/presets/{preset_id}", response={200: PresetOut, **ERRORS}, tags=["presets"])
def preset_get(request: HttpRequest, preset_id: int) -> Any:
    return selectors.access_preset(request.user, preset_id)


@router.patch("/presets/{preset_id}", response={200: PresetOut, **ERRORS}, tags=["presets"])
def preset_patch(request: HttpRequest, preset_id: int, payload: PresetPatch) -> Any:
    preset = selectors.access_preset(request.user, preset_id)
    fields = payload.dict(exclude_unset=True)
    if "model" in fields:
        fields["model"] = card_in_team(request.user, fields["model"], preset.team)
    with refused_as_http():
        return presets.preset_update(user=request.user, preset=preset, fields=fields)


@router.delete("/presets/{preset_id}", response={204: None, **ERRORS}, tags=["presets"])
def preset_delete(request: HttpRequest, preset_id: int) -> Any:
    selectors.access_preset(request.user, preset_id).delete()
    return Status(204, None)


# Sessions ------------------------------------------------------------------------------


def session_json(
    session: Session,
    view: SessionView | None = None,
    counts: dict[str, dict[str, int]] | None = None,
) -> dict[str, Any]:
    """The session; with its `view`, the meter shows the next context exactly as the context
    view does. Without (a list), the last prompt's size from the session's state. `counts`:
    its usage when the caller summed a page of sessions at once."""
    if view is None:
        state, _ = state_load(session.pk)
        policy = wiring.policy_for(session).within(state.effective_window)
        meter = context_meter(policy, state.last_prompt_tokens)
    else:
        meter = context_meter(view.policy, view.context.tokens, view.counter.describe())
    if counts is None:
        spent = usage.session_usage(session)
    else:
        spent = usage.priced(counts, session.model.prices)
    return session_out(session, meter, selectors.last_error(session.pk), spent)


def session_detail_json(session: Session) -> dict[str, Any]:
    return session_json(session, stores.session_view(session))


@router.post("/sessions", response={201: dict, **ERRORS}, tags=["sessions"])
def session_create(request: HttpRequest, payload: SessionIn) -> Any:
    team = team_for_create(request.user, payload.team)
    fields = payload.dict(exclude={"team"}, exclude_none=True)
    selections_check(fields, user=request.user, team=team)
    if payload.preset is not None:
        fields["preset"] = selectors.access_preset(request.user, payload.preset)
        if fields["preset"].team_id != team.pk:
            raise HttpError(400, f"Preset {payload.preset} belongs to another team.")
    fields["model"] = card_in_team(request.user, payload.model, team)
    with refused_as_http():
        session = services.session_create(user=request.user, team=team, fields=fields)
    return Status(201, session_detail_json(session))


@router.get("/sessions", response={200: list[dict], **ERRORS}, tags=["sessions"])
def session_list(
    request: HttpRequest,
    q: str = Query("", max_length=200),
    limit: int = Query(100, ge=1, le=500),
) -> Any:
    sessions = list(selectors.sessions_visible(request.user, q=q)[:limit])
    counts = usage.usage_by_session(s.pk for s in sessions)
    return [session_json(s, counts=counts.get(s.pk) or usage.empty()) for s in sessions]


@router.get("/sessions/{session_id}", response={200: dict, **ERRORS}, tags=["sessions"])
def session_get(request: HttpRequest, session_id: int) -> Any:
    return session_detail_json(selectors.access_session(request.user, session_id))


@router.patch("/sessions/{session_id}", response={200: dict, **ERRORS}, tags=["sessions"])
def session_patch(request: HttpRequest, session_id: int, payload: SessionPatch) -> Any:
    session = selectors.access_session(request.user, session_id)
    fields = payload.dict(exclude_unset=True)
    selections_check(fields, user=request.user, team=session.team, current=session.memory)
    with transaction.atomic():  # all that was sent, or nothing
        if "memory" in fields:  # a change of memory is a notice in the log
            memory_services.session_memory_set(
                session=session, memory=fields.pop("memory") or [], user=request.user
            )
        if "skills" in fields or "bundles" in fields:  # so is a change of skills or bundles
            skills_panels.session_skills_set(
                session=session, user=request.user,
                skills=fields.pop("skills", session.skills) or [],
                bundles=fields.pop("bundles", session.bundles) or [],
            )  # fmt: skip
        services.session_update(session=session, fields=fields)
    return session_detail_json(session)


@router.get(
    "/sessions/{session_id}/entries", response={200: EntriesOut, **ERRORS}, tags=["sessions"]
)
def entry_list(
    request: HttpRequest,
    session_id: int,
    after: int | None = Query(None, ge=0, le=SEQ_MAX),
    before: int | None = Query(None, ge=0, le=SEQ_MAX),
    limit: int = Query(100, ge=1, le=500),
) -> Any:
    session = selectors.access_session(request.user, session_id)
    entries, has_more = entries_out(session.pk, after=after, before=before, limit=limit)
    return {"entries": entries, "has_more": has_more}


@router.post(
    "/sessions/{session_id}/messages", response={200: dict, 202: dict, **ERRORS}, tags=["sessions"]
)
def message_post(
    request: HttpRequest,
    session_id: int,
    payload: MessageIn,
    wait: float | None = Query(None, ge=0, le=300),
) -> Any:
    session = selectors.access_session(request.user, session_id)
    before = session.last_seq
    with refused_as_http():
        posted = services.message_post(session=session, user=request.user, text=payload.text)
    body: dict[str, Any] = {"seq": posted.seq, "queued": posted.queued}
    if posted.help is not None:  # for the person who asked only: no entry, no turn
        return Status(200, {**body, "help": posted.help})
    if posted.session is not None:
        return Status(202, {**body, "session": posted.session})
    if wait is None:
        return Status(202, body)
    status = settled_status(session.pk, wait)
    entries, _ = entries_since_out(session.pk, before)
    return Status(200, {**body, "status": status, "entries": entries})


@router.get(
    "/sessions/{session_id}/commands",
    response={200: list[CompletionOut], **ERRORS},
    tags=["sessions"],
)
def command_list(request: HttpRequest, session_id: int) -> Any:
    """The slash commands the composer completes: the built-ins, then the team's templates."""
    session = selectors.access_session(request.user, session_id)
    return registry_of(session).completions()


@router.post("/sessions/{session_id}/compact", response={202: dict, **ERRORS}, tags=["sessions"])
def compact_post(request: HttpRequest, session_id: int, payload: CompactIn) -> Any:
    """The same as typing `/compact [instructions]`: it runs at the next turn boundary."""
    session = selectors.access_session(request.user, session_id)
    text = f"/compact {payload.instructions or ''}".strip()
    with refused_as_http():
        posted = services.message_post(session=session, user=request.user, text=text)
    return Status(202, {"seq": posted.seq, "queued": posted.queued})


@router.post("/sessions/{session_id}/fork", response={201: dict, **ERRORS}, tags=["sessions"])
def fork_post(
    request: HttpRequest,
    session_id: int,
    payload: ForkIn | None = None,
    wait: float | None = Query(None, ge=0, le=300),
) -> Any:
    """A new session from a summary of this one (`/summary-n-fork`), which stays as it was.

    With `document` (an edited `/handoff`), the new session starts from that text instead.
    """
    parent = selectors.access_session(request.user, session_id)
    document = payload.document if payload else None
    with refused_as_http():
        child = branching.session_fork(parent=parent, user=request.user, document=document)
    if wait:
        settled_status(child.pk, wait)
        child.refresh_from_db()
    return Status(201, session_detail_json(child))


@router.post("/sessions/{session_id}/rewind", response={201: dict, **ERRORS}, tags=["sessions"])
def rewind_post(request: HttpRequest, session_id: int, payload: RewindIn) -> Any:
    """A new session holding this one's model-visible history up to `seq`."""
    parent = selectors.access_session(request.user, session_id)
    with refused_as_http():
        child = branching.session_rewind(
            parent=parent, user=request.user, seq=payload.seq, text=payload.text
        )
    return Status(201, session_detail_json(child))


@router.post("/sessions/{session_id}/summary", response={201: dict, **ERRORS}, tags=["sessions"])
def summary_post(request: HttpRequest, session_id: int, payload: SummaryEditIn) -> Any:
    """Edit the latest summary: appended as a new boundary (trigger `edit`, same cut)."""
    session = selectors.access_session(request.user, session_id)
    with refused_as_http():
        entry = branching.summary_edit(
            session=session,
            user=request.user,
            boundary_seq=payload.boundary,
            summary=payload.summary,
            pin=payload.pin,
        )
    return Status(201, entry_out(entry, selectors.cut_seq(session.pk)))


@router.get(
    "/sessions/{session_id}/context", response={200: ContextOut, **ERRORS}, tags=["sessions"]
)
def context_get(request: HttpRequest, session_id: int) -> Any:
    return context_json(selectors.access_session(request.user, session_id))


def context_json(session: Session) -> dict[str, Any]:
    """Exactly what the model would be sent next, block by block (for the API and the page)."""
    view = stores.session_view(session)
    meter = context_meter(view.policy, view.context.tokens, view.counter.describe())
    return {
        "blocks": [vars(block) for block in view.context.blocks],
        **meter,
        "shortened": list(view.context.shortened),
        "truncated": [item.to_data() for item in view.memory.truncated],
    }


@router.get("/sessions/{session_id}/state", response={200: StateOut, **ERRORS}, tags=["sessions"])
def state_get(request: HttpRequest, session_id: int) -> Any:
    session = selectors.access_session(request.user, session_id)
    return state_json(*state_load(session.pk))


@router.post("/sessions/{session_id}/answers", response={202: dict, **ERRORS}, tags=["sessions"])
def answer_post(request: HttpRequest, session_id: int, payload: AnswerIn) -> Any:
    """Answer a pending question; it enters the log as an `answer` entry and work resumes."""
    session = selectors.access_session(request.user, session_id)
    with refused_as_http():
        posted = services.answer_post(
            session=session, user=request.user, question=payload.question, text=payload.text
        )
    return Status(202, {"seq": posted.seq, "queued": posted.queued})
