"""Use cases that change sessions: create, post a message, append to the log.

Input is stored before anything else happens: a posted message becomes a `QueuedInput` row
in its own transaction, and only then does the caller try to take the turn lease. Whoever
holds the lease moves queued input into the log (`inputs_enter_log`), so entries are only
appended by the lease holder, in order, at a turn boundary.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from sessions_app import events
from sessions_app.leases import lease_release, lease_take, status_of
from sessions_app.models import AgentPreset, Entry, ModelCard, QueuedInput, Session
from sessions_app.schemas import entry_out
from sessions_app.selectors import cut_seq
from teams_app.models import Team

SELECTION_FIELDS = (
    "memory",
    "skills",
    "bundles",
    "subagent_types",
    "mcp_servers",
    "auto_compact",
    "compact_at",
)
HELP = (
    "Slash commands: /help shows this list. /compact, /summary-n-fork, /handoff and /rewind "
    "arrive with compaction."
)


LOCAL_CARD = {
    "name": "SmolLM2 135M (bundled, local)",
    "model": "smollm2-135m-instruct",
    "context_window": 2048,
    "max_output_tokens": 256,
}


class InputTooLarge(ValueError):
    pass


class InvalidInput(ValueError):
    pass


@dataclass(frozen=True, kw_only=True)
class Posted:
    seq: int | None
    queued: bool
    lease: str | None = None


def entry_append(
    *,
    session_id: int,
    kind: str,
    content: str = "",
    data: Mapping[str, Any] | None = None,
    tokens: int | None = None,
    author: Any = None,
) -> Entry:
    with transaction.atomic():
        Session.objects.filter(pk=session_id).update(
            last_seq=F("last_seq") + 1, updated_at=timezone.now()
        )
        seq = Session.objects.values_list("last_seq", flat=True).get(pk=session_id)
        entry = Entry.objects.create(
            session_id=session_id,
            seq=seq,
            kind=kind,
            content=content,
            data=dict(data or {}),
            tokens=tokens,
            author=author,
        )
        events.send_on_commit(
            session_id, {"type": "entry", "entry": entry_out(entry, cut_seq(session_id))}
        )
    return entry


def session_create(*, user: Any, team: Team, fields: Mapping[str, Any]) -> Session:
    preset: AgentPreset | None = fields.get("preset")
    card: ModelCard | None = fields.get("model") or (preset.model if preset else None)
    card = card or default_card(team)
    session = Session(
        team=team, created_by=user, model=card, title=fields.get("title") or "", preset=preset
    )
    session.system_prompt = pick(
        fields, preset, "system_prompt", settings.HORSIE["DEFAULT_SYSTEM_PROMPT"]
    )
    session.max_steps = pick(fields, preset, "max_steps", settings.HORSIE["MAX_STEPS"])
    for name in SELECTION_FIELDS:
        default = getattr(Session, name).field.get_default()
        setattr(session, name, pick(fields, preset, name, default))
    session.save()
    return session


def default_card(team: Team) -> ModelCard:
    """The team's first model card; a team with none gets the bundled local model's."""
    card = ModelCard.objects.filter(team=team).order_by("id").first()
    if card is not None:
        return card
    return ModelCard.objects.create(
        team=team,
        name=LOCAL_CARD["name"],
        wire="local",
        model=LOCAL_CARD["model"],
        context_window=LOCAL_CARD["context_window"],
        max_output_tokens=LOCAL_CARD["max_output_tokens"],
    )


def pick(fields: Mapping[str, Any], preset: AgentPreset | None, name: str, default: Any) -> Any:
    """An explicit field wins over the preset's value, which wins over the default."""
    if fields.get(name) is not None:
        return fields[name]
    if preset is not None:
        return getattr(preset, name)
    return default


def input_check(text: str) -> None:
    if not text.strip():
        raise InvalidInput("The message is empty.")
    limit = settings.HORSIE["MESSAGE_MAX_CHARS"]
    if len(text) > limit:
        raise InputTooLarge(f"The message has {len(text)} characters; the limit is {limit}.")


def message_post(*, session: Session, user: Any, text: str) -> Posted:
    """Store the input, then take the turn if nobody holds it; else it waits its turn."""
    input_check(text)
    queued = QueuedInput.objects.create(session=session, text=text, author=user)
    interrupted = status_of(session) != session.status
    lease = lease_take(session.pk)
    if lease is None:
        return Posted(seq=None, queued=True)
    if interrupted:
        entry_append(
            session_id=session.pk,
            kind="notice",
            data={"code": "turn_interrupted"},
            content="The previous turn was interrupted (its runner stopped) and did not finish.",
        )
    events.send_now(session.pk, {"type": "status", "status": "running"})
    entered, needs_turn = inputs_enter_log(session.pk)
    if not needs_turn:
        lease = turn_boundary(session.pk, lease)
    if lease is not None:
        from sessions_app.dispatcher import turn_dispatch

        turn_dispatch(session.pk, lease)
    seq = entered.get(queued.pk)
    return Posted(seq=seq, queued=seq is None, lease=lease)


def inputs_enter_log(session_id: int) -> tuple[dict[int, int], bool]:
    """Move queued input into the log (lease holder only). Returns seqs and whether to run."""
    entered: dict[int, int] = {}
    needs_turn = False
    with transaction.atomic():
        for row in QueuedInput.objects.filter(session_id=session_id).select_for_update():
            entry, wants_turn = input_append(session_id, row)
            entered[row.pk] = entry.seq
            needs_turn = needs_turn or wants_turn
            row.delete()
    return entered, needs_turn


def input_append(session_id: int, row: QueuedInput) -> tuple[Entry, bool]:
    if not row.text.startswith("/"):
        return entry_append(
            session_id=session_id, kind="user", content=row.text, author=row.author
        ), True
    entry = entry_append(
        session_id=session_id,
        kind="command",
        content=row.text,
        author=row.author,
        data={"name": command_name(row.text)},
    )
    command_run(session_id, command_name(row.text))
    return entry, False


def command_name(text: str) -> str:
    return text[1:].split(maxsplit=1)[0] if len(text) > 1 and not text[1].isspace() else ""


def command_run(session_id: int, name: str) -> None:
    if name == "help":
        entry_append(session_id=session_id, kind="notice", content=HELP, data={"code": "help"})
        return
    entry_append(
        session_id=session_id,
        kind="notice",
        content=f"Unknown command /{name}. Type /help for the list.",
        data={"code": "unknown_command", "command": name},
    )


def session_release(session_id: int, lease: str) -> None:
    if lease_release(session_id, lease):
        events.send_on_commit(session_id, {"type": "status", "status": "idle"})


def turn_boundary(session_id: int, lease: str) -> str | None:
    """Between turns: queued input enters the log, or the session is released.

    Returns the lease to run the next turn under, or None when the session is now idle.
    After releasing, look once more: input queued while we were releasing would otherwise
    wait for the next message. Retaking may fail when another post took the lease first;
    that post's runner then handles the input.
    """
    _, needs_turn = inputs_enter_log(session_id)
    if needs_turn:
        return lease
    session_release(session_id, lease)
    if not QueuedInput.objects.filter(session_id=session_id).exists():
        return None
    retaken = lease_take(session_id)
    if retaken is None:
        return None
    events.send_now(session_id, {"type": "status", "status": "running"})
    return turn_boundary(session_id, retaken)


def session_update(*, session: Session, fields: Mapping[str, Any]) -> Session:
    for name, value in fields.items():
        if value is not None:
            setattr(session, name, value)
    session.save()
    return session
