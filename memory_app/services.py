"""Changes to memory: spaces, notes (each change a revision), imports, and selections.

Every note write names the `version` it read. The write is one conditional UPDATE
(`WHERE version = <read>`) in the transaction that records the revision, so of two writers
who read the same version exactly one wins; the other gets `Conflict` carrying the note as
it now is, and nothing of theirs is stored over anyone else's. A change that changes
nothing makes no version.

Writes come from a person (`user=`) or from an agent (`by_session=` the session's id and
`seq=` the entry that made the call): the same functions serve the pages, the API and the
core's `memory` tool through its port. Whether a session may write a space (selected as
`write`) is the port adapter's check, not these functions'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from horsie_site.inputs import text_problem
from memory_app import archives
from memory_app.models import MemoryNote, MemoryRevision, MemorySpace
from memory_app.selectors import notes_of
from sessions_app.models import AgentPreset, Session
from sessions_app.services import InputTooLarge, InvalidInput, ServiceError, entry_append
from teams_app.models import Team

NOTE_MAX_CHARS = 20_000
TITLE_MAX = 200
NAME_MAX = 100
DESCRIPTION_MAX = 2_000
BUDGET_MAX = 1_000_000


class Conflict(ServiceError):
    """A write that named a version the note has moved on from; `note` is the note now."""

    status = 409

    def __init__(self, message: str, note: MemoryNote) -> None:
        super().__init__(message)
        self.note = note


class NoteGone(ServiceError):
    """The note was deleted since it was read."""

    status = 404


class ImportRefused(ServiceError):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, kw_only=True)
class Author:
    """Who makes a change: a person, or an agent's session and the entry seq of its call."""

    user: Any = None
    session_id: int | None = None
    seq: int | None = None

    @classmethod
    def of(cls, user: Any, by_session: int | None, seq: int | None) -> Author:
        if (user is None) == (by_session is None):
            raise ValueError("a change is made by a user or by a session, exactly one")
        return cls(user=user, session_id=by_session, seq=seq)

    def note_fields(self) -> dict[str, Any]:
        return {"updated_by": self.user, "updated_by_session_id": self.session_id,
                "updated_by_seq": self.seq}  # fmt: skip

    def revision_fields(self) -> dict[str, Any]:
        return {"user": self.user, "session_id": self.session_id, "seq": self.seq}


# Checks --------------------------------------------------------------------------------


def title_check(title: str, what: str = "note title") -> str:
    """A title names a file (`/memories/<space>/<title>.md`): one line, no slash."""
    title = title.strip()
    if not title:
        raise InvalidInput(f"The {what} is empty.")
    problem = text_problem(title)
    if problem:
        raise InvalidInput(f"The {what} {problem}.")
    if len(title) > TITLE_MAX:
        raise InvalidInput(f"The {what} has {len(title)} characters; the limit is {TITLE_MAX}.")
    if "/" in title or "\\" in title or title in (".", "..") or title.startswith("."):
        raise InvalidInput(
            f"The {what} {title[:80]!r} cannot hold a slash or start with a dot: it names a "
            "file under /memories/<space>/."
        )
    if any(ord(char) < 32 or ord(char) == 127 for char in title):
        raise InvalidInput(f"The {what} must be one line without control characters.")
    return title


def body_check(body: str) -> str:
    problem = text_problem(body)
    if problem:
        raise InvalidInput(f"The note {problem}.")
    if len(body) > NOTE_MAX_CHARS:
        raise InputTooLarge(
            f"The note has {len(body)} characters; the limit is {NOTE_MAX_CHARS}. Keep memory "
            "short, and put long procedures in a skill."
        )
    return body


def name_check(name: str) -> str:
    name = title_check(name, "space name")
    if len(name) > NAME_MAX:
        raise InvalidInput(f"The space name has {len(name)} characters; the limit is {NAME_MAX}.")
    return name


def description_check(description: str) -> str:
    problem = text_problem(description)
    if problem:
        raise InvalidInput(f"The description {problem}.")
    if len(description) > DESCRIPTION_MAX:
        raise InvalidInput(f"The description is longer than {DESCRIPTION_MAX} characters.")
    return description


def budget_check(budget: Any) -> int:
    if not isinstance(budget, int) or isinstance(budget, bool) or not 1 <= budget <= BUDGET_MAX:
        raise InvalidInput(f"The budget is a whole number of tokens from 1 to {BUDGET_MAX}.")
    return budget


# Spaces --------------------------------------------------------------------------------


def space_name_free(*, team: Team, name: str, scope: str, owner: Any, exclude: int | None) -> None:
    taken = MemorySpace.objects.filter(team=team, name=name, scope=scope)
    if scope == "personal":
        taken = taken.filter(owner=owner)
    if taken.exclude(pk=exclude).exists():
        where = "your personal spaces" if scope == "personal" else f"team {team.name}"
        raise InvalidInput(f"A memory space named {name!r} already exists in {where}.")


def space_create(
    *,
    user: Any,
    team: Team,
    name: str,
    description: str = "",
    scope: str = "team",
    budget_tokens: int = 2000,
) -> MemorySpace:
    if scope not in ("team", "personal"):
        raise InvalidInput("The scope is `team` or `personal`.")
    name = name_check(name)
    owner = user if scope == "personal" else None
    space_name_free(team=team, name=name, scope=scope, owner=owner, exclude=None)
    try:
        with transaction.atomic():
            return MemorySpace.objects.create(
                team=team, name=name, description=description_check(description), scope=scope,
                owner=owner, budget_tokens=budget_check(budget_tokens), created_by=user,
            )  # fmt: skip
    except IntegrityError:
        raise InvalidInput(f"A memory space named {name!r} already exists.") from None


def space_update(*, space: MemorySpace, fields: Mapping[str, Any]) -> MemorySpace:
    """Rename, describe or re-budget a space (its scope stays what it was made with)."""
    if "name" in fields:
        space.name = name_check(fields["name"])
        space_name_free(team=space.team, name=space.name, scope=space.scope,
                        owner=space.owner, exclude=space.pk)  # fmt: skip
    if "description" in fields:
        space.description = description_check(fields["description"])
    if "budget_tokens" in fields:
        space.budget_tokens = budget_check(fields["budget_tokens"])
    try:
        with transaction.atomic():
            space.save()
    except IntegrityError:
        raise InvalidInput(f"A memory space named {space.name!r} already exists.") from None
    return space


def space_delete(*, space: MemorySpace, user: Any) -> list[int]:
    """Delete the space and its notes; remove it from every session's and preset's selection,
    with a `memory_space_removed` notice in each session that had it. Returns those sessions."""
    noticed: list[int] = []
    with transaction.atomic():
        for preset_id, selection in selections_with(AgentPreset, space):
            AgentPreset.objects.filter(pk=preset_id).update(memory=without(selection, space.pk))
        for session_id, selection in selections_with(Session, space):
            Session.objects.filter(pk=session_id).update(memory=without(selection, space.pk))
            entry_append(
                session_id=session_id,
                kind="notice",
                content=f"Memory space `{space.name}` was deleted; it is no longer in this "
                "session's context.",
                data={"code": "memory_space_removed", "space": space.pk, "name": space.name},
                author=user,
            )
            noticed.append(session_id)
        space.delete()
    return noticed


def selections_with(model: Any, space: MemorySpace) -> list[tuple[int, list[Any]]]:
    """(id, memory) of the team's sessions or presets whose selection names the space. Read in
    Python: SQLite's JSON fields have no `contains`."""
    rows = model.objects.filter(team_id=space.team_id).values_list("pk", "memory")
    return [(pk, memory) for pk, memory in rows.iterator() if space.pk in selected_ids(memory)]


def selected_ids(selection: Any) -> list[int]:
    return [item.get("space") for item in selection or [] if isinstance(item, dict)]


def without(selection: list[Any], space_id: int) -> list[Any]:
    return [
        item for item in selection if not (isinstance(item, dict) and item.get("space") == space_id)
    ]


# Notes ---------------------------------------------------------------------------------


def title_free(space: MemorySpace, title: str, exclude: int | None = None) -> None:
    if MemoryNote.objects.filter(space=space, title=title).exclude(pk=exclude).exists():
        raise InvalidInput(f"A note titled {title!r} already exists in space {space.name!r}.")


def note_create(
    *,
    space: MemorySpace,
    title: str,
    body: str = "",
    pinned: bool = False,
    user: Any = None,
    by_session: int | None = None,
    seq: int | None = None,
) -> MemoryNote:
    author = Author.of(user, by_session, seq)
    title, body = title_check(title), body_check(body)
    title_free(space, title)
    try:
        with transaction.atomic():
            note = MemoryNote.objects.create(
                space=space, title=title, body=body, pinned=pinned, **author.note_fields()
            )
            revision_add(note, "create", author, title_before="", body_before="")
    except IntegrityError:  # a concurrent create of the same title won
        raise InvalidInput(
            f"A note titled {title!r} already exists in space {space.name!r}."
        ) from None
    return note


def note_update(
    *,
    note: MemoryNote,
    version: int,
    title: str | None = None,
    body: str | None = None,
    pinned: bool | None = None,
    user: Any = None,
    by_session: int | None = None,
    seq: int | None = None,
    restored_from: int | None = None,
) -> MemoryNote:
    """Change what is given, if `version` is still the note's; else `Conflict`."""
    author = Author.of(user, by_session, seq)
    wanted: dict[str, Any] = {}
    if title is not None:
        wanted["title"] = title_check(title)
    if body is not None:
        wanted["body"] = body_check(body)
    if pinned is not None:
        wanted["pinned"] = bool(pinned)
    try:
        with transaction.atomic():
            return note_change(note.pk, version, wanted, author, restored_from)
    except IntegrityError:
        raise InvalidInput(f"A note titled {wanted.get('title')!r} already exists here.") from None


def note_change(
    note_id: int, version: int, wanted: dict[str, Any], author: Author, restored_from: int | None
) -> MemoryNote:
    before = note_at(note_id, version)
    changes = {name: value for name, value in wanted.items() if getattr(before, name) != value}
    if not changes:
        return before
    if "title" in changes:
        title_free(before.space, changes["title"], exclude=note_id)
    updated = MemoryNote.objects.filter(pk=note_id, version=version).update(
        **changes, version=version + 1, updated_at=timezone.now(), **author.note_fields()
    )
    if not updated:  # another writer got in between the read and this write
        note_at(note_id, version)
    after = MemoryNote.objects.select_related("space", "updated_by").get(pk=note_id)
    action = "restore" if restored_from else action_of(changes, after)
    revision_add(after, action, author, title_before=before.title, body_before=before.body,
                 restored_from=restored_from)  # fmt: skip
    return after


def action_of(changes: Mapping[str, Any], after: MemoryNote) -> str:
    if "body" in changes:
        return "update"
    if "title" in changes:
        return "rename"
    return "pin" if after.pinned else "unpin"


def note_at(note_id: int, version: int) -> MemoryNote:
    """The note, when it is still at `version`; else `Conflict` with it as it is now."""
    note = MemoryNote.objects.select_related("space", "updated_by").filter(pk=note_id).first()
    if note is None:
        raise NoteGone("This note was deleted since you read it.")
    if note.version != version:
        by = who(note)
        raise Conflict(
            f"The note {note.title!r} changed since you read it: you sent version {version}, "
            f"it is at version {note.version}{f' (last changed by {by})' if by else ''}. "
            f"Nothing was overwritten: merge your change into the current text and send "
            f"version {note.version}.",
            note,
        )
    return note


def who(note: MemoryNote) -> str:
    if note.updated_by_session_id:
        return f"session {note.updated_by_session_id}"
    return note.updated_by.username if note.updated_by else ""


def note_rename(
    *, note: MemoryNote, version: int, title: str, user: Any = None,
    by_session: int | None = None, seq: int | None = None,
) -> MemoryNote:  # fmt: skip
    return note_update(note=note, version=version, title=title, user=user,
                       by_session=by_session, seq=seq)  # fmt: skip


def note_delete(
    *, note: MemoryNote, version: int, user: Any = None,
    by_session: int | None = None, seq: int | None = None,
) -> None:  # fmt: skip
    """Delete the note, if `version` is still its; its revisions stay, with a `delete` one."""
    author = Author.of(user, by_session, seq)
    with transaction.atomic():
        current = note_at(note.pk, version)
        if not MemoryNote.objects.filter(pk=note.pk, version=version).delete()[0]:
            note_at(note.pk, version)
        MemoryRevision.objects.create(
            space_id=current.space_id, note=None, number=version + 1, action="delete",
            title_before=current.title, body_before=current.body, **author.revision_fields(),
        )  # fmt: skip


def note_restore(
    *, note: MemoryNote, number: int, version: int | None = None, user: Any = None,
    by_session: int | None = None, seq: int | None = None,
) -> MemoryNote:  # fmt: skip
    """Make the note what revision `number` left it (title and text), as a new change."""
    revision = MemoryRevision.objects.filter(note=note, number=number).first()
    if revision is None:
        raise InvalidInput(f"The note has no revision {number}.")
    return note_update(
        note=note, version=note.version if version is None else version,
        title=revision.title_after, body=revision.body_after, user=user,
        by_session=by_session, seq=seq, restored_from=number,
    )  # fmt: skip


def note_write(
    *, space: MemorySpace, title: str, body: str, version: int | None = None,
    user: Any = None, by_session: int | None = None, seq: int | None = None,
) -> MemoryNote:  # fmt: skip
    """Write the note titled `title`: create it (`version` None: it must not exist yet) or
    replace its text (`version`: the one read). The `memory` tool's create and edits."""
    if version is None:
        return note_create(space=space, title=title, body=body, user=user,
                           by_session=by_session, seq=seq)  # fmt: skip
    note = MemoryNote.objects.filter(space=space, title=title_check(title)).first()
    if note is None:
        raise NoteGone(f"No note titled {title!r} in space {space.name!r}.")
    return note_update(note=note, version=version, body=body, user=user,
                       by_session=by_session, seq=seq)  # fmt: skip


def revision_add(
    note: MemoryNote, action: str, author: Author, *, title_before: str, body_before: str,
    restored_from: int | None = None,
) -> MemoryRevision:  # fmt: skip
    return MemoryRevision.objects.create(
        space_id=note.space_id, note=note, number=note.version, action=action,
        title_before=title_before, title_after=note.title, body_before=body_before,
        body_after=note.body, pinned_after=note.pinned, restored_from=restored_from,
        **author.revision_fields(),
    )  # fmt: skip


# Import and export ---------------------------------------------------------------------


def space_import(
    *, user: Any, team: Team, uploads: Iterable[archives.Upload], name: str | None = None,
    scope: str = "team", description: str = "",
) -> MemorySpace:  # fmt: skip
    """A new space from an upload, all or nothing: every note is checked first, and any
    refusal (naming its file) leaves no space and no note behind."""
    uploads = list(uploads)
    try:
        pieces = archives.pieces_from(uploads)
    except archives.Refused as refused:
        raise ImportRefused(str(refused), refused.status) from None
    for piece in pieces:
        try:
            title_check(piece.title)
            body_check(piece.body)
        except ServiceError as error:
            raise ImportRefused(f"{piece.source}: {error}", error.status) from None
    name = name or uploads[0][0].rsplit(".", 1)[0]
    with transaction.atomic():
        space = space_create(user=user, team=team, name=name, scope=scope, description=description)
        for piece in pieces:
            note_create(space=space, title=piece.title, body=piece.body, user=user)
    return space


def space_export(*, space: MemorySpace) -> bytes:
    return archives.zip_of((note.title, note.body) for note in notes_of(space).order_by("title"))


# Selection -----------------------------------------------------------------------------


def session_memory_set(*, session: Session, memory: list[dict[str, Any]], user: Any) -> Session:
    """Set the session's memory selection; a change is a `memory_changed` notice in its log
    (it applies from the next model call)."""
    before = {item["space"]: item["mode"] for item in session.memory if isinstance(item, dict)}
    after = {item["space"]: item["mode"] for item in memory}
    session.memory = memory
    session.save(update_fields=["memory", "updated_at"])
    if before != after:
        entry_append(
            session_id=session.pk, kind="notice", author=user,
            content=change_text(before, after), data=change_data(before, after),
        )  # fmt: skip
    return session


def change_data(before: dict[int, str], after: dict[int, str]) -> dict[str, Any]:
    return {
        "code": "memory_changed",
        "removed": [space for space in before if space not in after],
        "added": [{"space": s, "mode": m} for s, m in after.items() if s not in before],
        "changed": [{"space": s, "mode": m} for s, m in after.items() if before.get(s, m) != m],
    }


def change_text(before: dict[int, str], after: dict[int, str]) -> str:
    names = dict(MemorySpace.objects.filter(pk__in=[*before, *after]).values_list("pk", "name"))
    parts = [f"switched off `{names.get(s, s)}`" for s in before if s not in after]
    parts += [f"added `{names.get(s, s)}` ({m})" for s, m in after.items() if s not in before]
    parts += [f"`{names.get(s, s)}` is now {m}" for s, m in after.items() if before.get(s, m) != m]
    return f"Memory changed: {'; '.join(parts)}. It applies from the next model call."
