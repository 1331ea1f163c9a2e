"""The core's `MemorySource` on the ORM: what a session selected, and its agent's writes.

Spaces are read again on every model call, so a teammate's edit reaches the next call.
Writes go through the same services as the forms and the API (versions, revisions), named
as the session's at the seq of the call that made them; only a space the session selected
as `write` can change, and a service's refusal becomes a message for the model.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import transaction
from django.db.models import Count, Max, Sum

from harness import memory as core
from memory_app import selectors, services
from memory_app.models import MemoryNote, MemorySpace
from sessions_app.models import Session
from sessions_app.services import ServiceError
from sessions_app.threads import db


def note_value(note: MemoryNote) -> core.MemoryNote:
    return core.MemoryNote(
        title=note.title,
        body=note.body,
        pinned=note.pinned,
        version=note.version,
        updated_at=note.updated_at,
    )


def space_value(space: MemorySpace, mode: str) -> core.MemorySpace:
    """One space as the core sees it, its notes read now (for pages; turns use
    `spaces_now`)."""
    return core.MemorySpace(
        id=space.pk,
        name=space.name,
        description=space.description,
        mode="write" if mode == "write" else "read",
        budget_tokens=space.budget_tokens,
        notes=notes_read([space.pk])[space.pk],
    )


Stamp = tuple[int, int, Any]
_NOTES: dict[int, tuple[Stamp, tuple[core.MemoryNote, ...]]] = {}


def spaces_now(session_id: int) -> list[core.MemorySpace]:
    """The selected spaces with their notes, as of now. This runs before every model call,
    so each process keeps the notes it read, by space, with a stamp of the space's notes
    (how many, their versions added up, the newest change) that any write in any process
    moves: a call reads the selection and the spaces with their stamps (two queries), and
    the notes of a space only when its stamp moved."""
    return spaces_selected(Session.objects.values_list("memory", flat=True).get(pk=session_id))


def spaces_selected(selection: list[dict[str, Any]] | None) -> list[core.MemorySpace]:
    """`spaces_now` for a session's `memory` selection already read."""
    wanted = [(item["space"], item.get("mode", "read")) for item in selection or []]
    if not wanted:
        return []
    spaces = MemorySpace.objects.annotate(
        count=Count("notes"), versions=Sum("notes__version"), last=Max("notes__updated_at")
    ).in_bulk([space_id for space_id, _ in wanted])
    stamps = {pk: (s.count, s.versions or 0, s.last) for pk, s in spaces.items()}
    stale = [pk for pk, stamp in stamps.items() if _NOTES.get(pk, (None,))[0] != stamp]
    for space_id, notes in notes_read(stale).items():
        _NOTES[space_id] = (stamps[space_id], notes)
    return [
        core.MemorySpace(
            id=space_id,
            name=spaces[space_id].name,
            description=spaces[space_id].description,
            mode="write" if mode == "write" else "read",
            budget_tokens=spaces[space_id].budget_tokens,
            notes=_NOTES[space_id][1],
        )
        for space_id, mode in wanted
        if space_id in spaces  # a space deleted since is left out
    ]


def notes_read(space_ids: list[int]) -> dict[int, tuple[core.MemoryNote, ...]]:
    notes: dict[int, list[core.MemoryNote]] = {pk: [] for pk in space_ids}
    if not space_ids:
        return {}
    rows = MemoryNote.objects.filter(space_id__in=space_ids).values_list(
        "space_id", "title", "body", "pinned", "version", "updated_at"
    )
    for space_id, title, body, pinned, version, updated_at in rows:
        notes[space_id].append(
            core.MemoryNote(
                title=title, body=body, pinned=pinned, version=version, updated_at=updated_at
            )
        )
    return {pk: tuple(found) for pk, found in notes.items()}


def writable(session_id: int, name: str) -> MemorySpace:
    selection = Session.objects.values_list("memory", flat=True).get(pk=session_id)
    chosen = [(s, mode) for s, mode in selectors.spaces_selected(selection) if s.name == name]
    if not chosen:
        raise core.MemoryRefused(f"No memory space `{name}` is selected in this session.")
    space, mode = chosen[0]
    if mode != "write":
        raise core.MemoryRefused(
            f"Space `{name}` is selected read only in this session: it cannot change."
        )
    return space


def existing(space: MemorySpace, title: str) -> MemoryNote:
    note = selectors.note_find(space=space, title=title)
    if note is None:
        raise core.MemoryConflict(None)
    return note


@contextmanager
def refusals_for_the_model() -> Iterator[None]:
    try:
        yield
    except services.Conflict as conflict:
        raise core.MemoryConflict(note_value(conflict.note)) from None
    except services.NoteGone:
        raise core.MemoryConflict(None) from None
    except ServiceError as error:
        raise core.MemoryRefused(str(error)) from None


def write_now(session_id: int, *, space: str, title: str, body: str, version: int | None,
              seq: int) -> core.MemoryNote:  # fmt: skip
    with refusals_for_the_model():
        note = services.note_write(
            space=writable(session_id, space), title=title, body=body, version=version,
            by_session=session_id, seq=seq,
        )  # fmt: skip
    return note_value(note)


def delete_now(session_id: int, *, space: str, title: str, version: int, seq: int) -> None:
    with refusals_for_the_model():
        note = existing(writable(session_id, space), title)
        services.note_delete(note=note, version=version, by_session=session_id, seq=seq)


def rename_now(session_id: int, *, space: str, title: str, new_space: str, new_title: str,
               version: int, seq: int) -> core.MemoryNote:  # fmt: skip
    """Within a space, a rename; across spaces, a create and a delete in one transaction."""
    by = {"by_session": session_id, "seq": seq}
    with refusals_for_the_model(), transaction.atomic():
        source = writable(session_id, space)
        note = existing(source, title)
        if new_space == space:
            return note_value(
                services.note_rename(note=note, version=version, title=new_title, **by)
            )
        target = writable(session_id, new_space)
        moved = services.note_create(
            space=target, title=new_title, body=note.body, pinned=note.pinned, **by
        )
        services.note_delete(note=note, version=version, **by)
        return note_value(moved)


class OrmMemorySource:
    async def selected(self, session_id: int) -> Sequence[core.MemorySpace]:
        spaces: list[core.MemorySpace] = await db(spaces_now)(session_id)
        return spaces

    async def note_write(self, session_id: int, *, space: str, title: str, body: str,
                         version: int | None, seq: int) -> core.MemoryNote:  # fmt: skip
        note: core.MemoryNote = await db(write_now)(
            session_id, space=space, title=title, body=body, version=version, seq=seq
        )
        return note

    async def note_delete(
        self, session_id: int, *, space: str, title: str, version: int, seq: int
    ) -> None:
        await db(delete_now)(session_id, space=space, title=title, version=version, seq=seq)

    async def note_rename(self, session_id: int, *, space: str, title: str, new_space: str,
                          new_title: str, version: int, seq: int) -> core.MemoryNote:  # fmt: skip
        note: core.MemoryNote = await db(rename_now)(
            session_id, space=space, title=title, new_space=new_space, new_title=new_title,
            version=version, seq=seq,
        )  # fmt: skip
        return note
