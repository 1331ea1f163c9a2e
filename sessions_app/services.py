"""Use cases that change sessions: create, post a message, append to the log.

Input is stored before anything else happens: a posted message becomes a `QueuedInput` row
in its own transaction, and only then does the caller try to take the turn lease. Whoever
holds the lease moves queued input into the log (`inputs_enter_log`), so entries are only
appended by the lease holder, in order, at a turn boundary.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from harness import commands, loop
from harness.ports import LeaseLost
from harness.state import token_count
from horsie_site import compiled
from horsie_site.inputs import SEQ_MAX, text_problem
from sessions_app import events, outbox
from sessions_app.commands import registry_of
from sessions_app.journal import journal_apply, state_empty, state_load, state_now
from sessions_app.leases import lease_release, lease_take, lease_take_over
from sessions_app.models import AgentPreset, Entry, ModelCard, QueuedInput, Session
from sessions_app.schemas import entry_out
from sessions_app.selectors import context_entries_now, kept_context
from teams_app.models import Team

SELECTION_FIELDS = (
    "memory",
    "skills",
    "bundles",
    "subagent_types",
    "mcp_servers",
    "auto_compact",
    "compact_at",
    "clear_tool_results",
)


log = logging.getLogger(__name__)

LOCAL_CARD = {
    "name": "SmolLM2 135M (bundled, local)",
    "model": "smollm2-135m-instruct",
    "context_window": 2048,
    "max_output_tokens": 256,
}


class ServiceError(ValueError):
    """A request a service refuses; `status` is its HTTP code for the API and the pages."""

    status = 400


class InputTooLarge(ServiceError):
    status = 413


class InvalidInput(ServiceError):
    status = 400


class NotPending(ServiceError):
    """An answer to a question that is not (or no longer) waiting for one."""

    status = 409


INTERRUPTED_CALL = (
    "The turn was interrupted before this call returned (its runner stopped). It may or may "
    "not have taken effect; check before repeating it."
)


@dataclass(frozen=True, kw_only=True)
class Posted:
    seq: int | None
    queued: bool
    lease: str | None = None
    session: int | None = None  # the new session a /summary-n-fork or /rewind made
    help: str | None = None  # /help's answer, for the person who asked only


def entry_append(
    *,
    session_id: int,
    kind: str,
    content: str = "",
    data: Mapping[str, Any] | None = None,
    tokens: int | None = None,
    author: Any = None,
    lease: str | None = None,
) -> Entry:
    """Append one entry with the next seq. A turn runner passes its `lease`: when another
    runner has taken the session over, nothing is written and `LeaseLost` is raised, so a
    runner that stalled past its lease can never add to a log that has moved on. A `tokens`
    figure that is not one (a provider reported nonsense) is stored as unknown. Inside a
    caller's transaction it is part of that transaction (no savepoint of its own: a failure
    here fails the caller's work, which is what every caller wants)."""
    with transaction.atomic(savepoint=False):
        seq = seq_next(session_id, lease)
        if seq is None:
            raise LeaseLost(f"session {session_id}: the lease {lease} is no longer held")
        entry = entry_insert(
            session_id=session_id,
            seq=seq,
            kind=kind,
            content=content,
            data=dict(data or {}),
            tokens=token_count(tokens),
            author=author,
        )
        # A new entry ends the log, and no cut lies after the end: it is in context by kind.
        events.send_on_commit(session_id, {"type": "entry", "entry": entry_out(entry, entry.seq)})
        journal_apply(entry)
    return entry


entry_insert = compiled.Insert(Entry)  # an entry is only ever inserted: no save, no signals


def seq_next(session_id: int, lease: str | None) -> int | None:
    """Bump the session's `last_seq` and read it back in one statement (UPDATE … RETURNING,
    on SQLite and PostgreSQL alike); None when `lease` is given and no longer held."""
    table = connection.ops.quote_name(Session._meta.db_table)
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    held, params = (
        ("", [now, session_id])
        if lease is None
        else (" AND lease_owner = %s", [now, session_id, lease])
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET last_seq = last_seq + 1, updated_at = %s "
            f"WHERE id = %s{held} RETURNING last_seq",
            params,
        )
        row = cursor.fetchone()
    return int(row[0]) if row else None


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
    log_started_empty(session.pk)
    from sessions_app.dispatcher import provider_prepare

    provider_prepare(card)  # its first turn is likely seconds away
    return session


def log_started_empty(session_id: int) -> None:
    """A new session's log is empty: its first turn reads its context and state on from
    there, one query each, not as a session this process has never read (three more)."""
    kept_context(session_id).empty()
    state_empty(session_id)


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


def input_check(text: str, what: str = "message") -> None:
    """Text a person sent: not empty, storable, and within the size limit."""
    if not text.strip():
        raise InvalidInput(f"The {what} is empty.")
    problem = text_problem(text)
    if problem:
        raise InvalidInput(f"The {what} {problem}.")
    limit = settings.HORSIE["MESSAGE_MAX_CHARS"]
    if len(text) > limit:
        raise InputTooLarge(f"The message has {len(text)} characters; the limit is {limit}.")


def message_post(*, session: Session, user: Any, text: str) -> Posted:
    """Store the input, then take the turn if nobody holds it; else it waits its turn.

    `/help` answers the person who asked and stores nothing. `/summary-n-fork` and
    `/rewind SEQ [text]` make a new session and leave this one exactly as it was: they are
    not stored here. A team template is expanded now, when sent: its `command` entry keeps
    what was typed and the expansion, which is what the model reads.
    """
    input_check(text)
    data: dict[str, Any] = {}
    parsed = commands.parse(text)
    if parsed is not None:
        registry = registry_of(session)
        if parsed.name == commands.HELP:
            return Posted(seq=None, queued=False, help=registry.help_text())
        branched = branch_command(session, user, parsed)
        if branched is not None:
            return Posted(seq=None, queued=False, session=branched)
        command = registry.get(parsed.name)
        if command is not None and command.kind == "template":
            expansion = commands.expand(command.template, parsed.args)
            input_check(expansion, "expanded command")
            data = {"expansion": expansion}
    return input_post(session.pk, QueuedInput(session=session, text=text, author=user, data=data))


def input_post(session_id: int, queued: QueuedInput) -> Posted:
    """Store a person's input and start its turn.

    With the lease free (the common case) the input goes straight into the log under it, in
    the transaction that first moves in whatever was queued before it: stored before any
    work starts, without the queue's insert, lock and delete. Otherwise it is queued (stored
    at once) and `turn_take` tries again: the lease freed meanwhile, or taken over from a
    dead runner, or left to the live one, which takes the input at its turn boundary.
    """
    with outbox.batched():
        lease = lease_take(session_id)
        if lease is None:
            # Queued first, then the lease tried again: a runner that released it meanwhile
            # saw nothing queued, and one releasing now sees this input and keeps it.
            queued.save()
            return turn_take(session_id, queued.pk)
        try:
            return turn_begin(session_id, lease, DIRECT, taken_over=False, direct=queued)
        except NotEntered:
            lease_release(session_id, lease)
            log.exception("session %s: an input could not enter the log directly", session_id)
        except Exception:
            lease_release(session_id, lease)  # never leave the session stuck in `running`
            raise
        # Its transaction rolled back with it: the input is kept in the queue instead, and
        # the turn is taken the usual way (if that fails too, the input still waits there).
        queued.save()
        return turn_take(session_id, queued.pk)


class NotEntered(Exception):
    """An input meant to enter the log directly did not: its transaction rolled back."""


def branch_command(session: Session, user: Any, parsed: commands.Parsed) -> int | None:
    from sessions_app import branching

    if parsed.name == commands.FORK:
        return branching.session_fork(parent=session, user=user).pk
    if parsed.name == commands.REWIND:
        rewind = commands.rewind_args(parsed.args, SEQ_MAX)
        if rewind is None:
            raise InvalidInput(commands.REWIND_USAGE)
        seq, text = rewind
        return branching.session_rewind(parent=session, user=user, seq=seq, text=text).pk
    return None


def answer_post(*, session: Session, user: Any, question: str, text: str) -> Posted:
    """Answer a pending question: stored at once, it enters the log as an `answer` entry."""
    input_check(text, "answer")
    with transaction.atomic():
        # One answer at a time per session: the row lock orders concurrent answers.
        list(Session.objects.select_for_update().filter(pk=session.pk).values_list("pk"))
        state, _ = state_load(session.pk)
        answered = QueuedInput.objects.filter(
            session=session, kind="answer", data__question=question
        ).exists()
        if state.question(question) is None or answered:
            raise NotPending(f"Question {question!r} is not waiting for an answer.")
        queued = QueuedInput.objects.create(
            session=session, kind="answer", text=text, author=user, data={"question": question}
        )
    return turn_start(session.pk, queued.pk)


def turn_start(session_id: int, queued_id: int | None = None) -> Posted:
    """Take the session's turn and run what is queued; a no-op while another runner has it.

    Taking over from a runner whose lease expired first closes (or resumes) its turn. The
    status, the entries and the dispatch go to the channel layer together, at the end.
    """
    with outbox.batched():
        return turn_take(session_id, queued_id)


def turn_take(session_id: int, queued_id: int | None) -> Posted:
    taken_over = False
    lease = lease_take(session_id)
    if lease is None:
        lease = lease_take_over(session_id)
        if lease is None:
            return Posted(seq=None, queued=True)
        taken_over = True
    try:
        return turn_begin(session_id, lease, queued_id, taken_over=taken_over)
    except Exception:
        lease_release(session_id, lease)  # never leave the session stuck in `running`
        raise


def turn_begin(
    session_id: int,
    lease: str,
    queued_id: int | None,
    *,
    taken_over: bool,
    direct: QueuedInput | None = None,
) -> Posted:
    resume = False
    if taken_over:
        # A fork whose runner died before writing its summary: the new runner writes it.
        fork_unwritten = Session.objects.filter(pk=session_id, kind="fork", last_seq=0).exists()
        resume = fork_unwritten or turn_interrupted(session_id)
    events.send_now(session_id, {"type": "status", "status": "running"})
    try:
        entered, needs_turn = inputs_enter_log(session_id, direct)
    except Exception as error:
        if direct is None:
            raise
        raise NotEntered(str(error)) from error
    if not (needs_turn or resume):
        lease = turn_boundary(session_id, lease)
    if lease is not None:
        from sessions_app.dispatcher import turn_dispatch

        turn_dispatch(session_id, lease)
    seq = entered.get(queued_id) if queued_id is not None else None
    return Posted(seq=seq, queued=seq is None, lease=lease)


def turn_interrupted(session_id: int) -> bool:
    """Close the turn a dead runner left: every open tool call gets an error result, and a
    notice says whether the turn resumes. Returns whether to resume it.

    It resumes when the model owes a reply (the log ends in input or tool results), unless
    the last thing in the log is already such a notice: a turn that kills its runner twice
    in a row without progress is closed instead of looping.
    """
    events.stream_forget(session_id)
    state, _ = state_load(session_id)
    last = Entry.objects.filter(session_id=session_id).order_by("-seq").first()
    again = (
        last is not None and last.kind == "notice" and last.data.get("code") == "turn_interrupted"
    )
    for call_id, (name, _) in state.open_calls.items():
        entry_append(
            session_id=session_id,
            kind="tool_result",
            content=INTERRUPTED_CALL,
            data={"call_id": call_id, "name": name, "is_error": True, "interrupted": True},
        )
    resume = not again and owes_reply(session_id)
    entry_append(
        session_id=session_id,
        kind="notice",
        data={"code": "turn_interrupted", "resumed": resume},
        content="The previous turn was interrupted (its runner stopped). "
        + ("It resumes here." if resume else "It was closed; send a message to go on."),
    )
    return resume


def owes_reply(session_id: int) -> bool:
    """Whether the last message in the session's context is one the model has not answered."""
    return loop.owes_reply(context_entries_now(session_id))


DIRECT = 0  # the key of an input that enters the log without being queued first


def inputs_enter_log(
    session_id: int, direct: QueuedInput | None = None
) -> tuple[dict[int, int], bool]:
    """Move queued input into the log (lease holder only), then `direct`, an input not
    queued. Returns the seqs by queued id (`DIRECT` for `direct`) and whether to run."""
    entered: dict[int, int] = {}
    needs_turn = False
    with transaction.atomic():
        rows = queued_now(session_id)
        for row in [*rows, *([direct] if direct is not None else [])]:
            entry, wants_turn = input_append(session_id, row)
            entered[row.pk or DIRECT] = entry.seq
            needs_turn = needs_turn or wants_turn
            if row.pk:
                row.delete()
    return entered, needs_turn


@compiled.select(int)
def queued_now(session_id: int) -> QuerySet[QueuedInput]:
    """The session's queued input, locked for the lease holder to move into the log."""
    queued = QueuedInput.objects.filter(session_id=session_id).select_related("author")
    return queued.select_for_update(of=("self",)).order_by("id")


def input_append(session_id: int, row: QueuedInput) -> tuple[Entry, bool]:
    if row.kind == "timer":
        return entry_append(
            session_id=session_id, kind="timer", content=row.text, data=row.data
        ), True
    if row.kind == "answer":
        return answer_append(session_id, row), True
    if row.kind == "subagent":
        return entry_append(
            session_id=session_id, kind="subagent_result", content=row.text, data=row.data
        ), True
    parsed = commands.parse(row.text)
    if parsed is None:
        return entry_append(
            session_id=session_id, kind="user", content=row.text, author=row.author
        ), True
    name = parsed.name
    data: dict[str, Any] = {"name": name}
    expansion = row.data.get("expansion")
    if expansion:
        data.update(args=parsed.args, expansion=str(expansion), template=True)
    if name == commands.COMPACT:
        data["instructions"] = parsed.args or None
    entry = entry_append(
        session_id=session_id, kind="command", content=row.text, author=row.author, data=data
    )
    if expansion or name in (commands.COMPACT, commands.HANDOFF):
        return entry, True  # the model reads the expansion; the runner compacts or hands off
    if commands.Registry.of().get(name) is None:
        entry_append(
            session_id=session_id,
            kind="notice",
            content=commands.Registry.of().unknown_text(name),
            data={"code": "unknown_command", "command": name},
        )
    return entry, False


def answer_append(session_id: int, row: QueuedInput) -> Entry:
    """An answer settles its question; one that lost a race to another answer stays a message."""
    state, _ = state_load(session_id)
    question = state.question(str(row.data.get("question", "")))
    if question is None:
        return entry_append(session_id=session_id, kind="user", content=row.text, author=row.author)
    return entry_append(
        session_id=session_id,
        kind="answer",
        content=row.text,
        author=row.author,
        data={"question": question.id, "asked": question.question},
    )


def session_release(session_id: int, lease: str, *, unless_queued: bool = False) -> bool:
    """Give the turn back: the session waits when a question is pending, else it is idle
    (`lease_release`, with `unless_queued` as there). Whether it was given back.

    The lease is released even when the state cannot be read (the runner that calls this
    may be failing because of it)."""
    try:
        status = "waiting" if state_now(session_id).questions else "idle"
    except Exception:
        log.exception("session %s: its state could not be read; releasing it as idle", session_id)
        status = "idle"
    released = lease_release(session_id, lease, status, unless_queued=unless_queued)
    if released:
        events.send_on_commit(session_id, {"type": "status", "status": status})
    return released


def turn_boundary(session_id: int, lease: str) -> str | None:
    """Between turns: queued input enters the log, or the session is released.

    Returns the lease to run the next turn under, or None when the session is now idle (or
    the lease is no longer this runner's). The release gives the lease back only while
    nothing is queued, in one statement, so no input is left waiting for the next message:
    input queued before it enters the log here, and input queued after it finds the lease
    free for its own poster to take.
    """
    while not session_release(session_id, lease, unless_queued=True):
        if not QueuedInput.objects.filter(session_id=session_id).exists():
            return None  # nothing queued, and still not released: the lease was lost
        _, needs_turn = inputs_enter_log(session_id)
        if needs_turn:
            return lease
    return None


def session_update(*, session: Session, fields: Mapping[str, Any]) -> Session:
    """Set what was sent; the schema allows `null` only where it means something."""
    for name, value in fields.items():
        setattr(session, name, value)
    # Only what was sent: a full save would write back a stale `last_seq` over entries
    # appended since the session was read.
    session.save(update_fields=[*fields, "updated_at"])
    return session
