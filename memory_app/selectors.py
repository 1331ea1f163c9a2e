"""Reads with access checks: one helper per object type, answering 404 for what is not yours.

A space is visible to the members of its team when it is shared (`team`), and to its owner
alone when it is `personal`; a note and its revisions are visible exactly when their space is.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet
from django.http import Http404

from harness.tokens import estimate_tokens
from memory_app.models import MemoryNote, MemoryRevision, MemorySpace
from teams_app.selectors import teams_of


def visible_to(user: Any) -> Q:
    if not user.is_authenticated:
        return Q(pk__in=[])
    return Q(team__in=teams_of(user)) & (Q(scope="team") | Q(owner=user))


def spaces_visible(user: Any, *, team: Any = None) -> QuerySet[MemorySpace]:
    queryset = MemorySpace.objects.filter(visible_to(user)).select_related("team", "owner")
    return queryset.filter(team=team) if team is not None else queryset


def access_memory_space(user: Any, pk: Any) -> MemorySpace:
    try:
        return spaces_visible(user).get(pk=int(pk))
    except (ValueError, TypeError, OverflowError, MemorySpace.DoesNotExist):
        raise Http404("No such memory space.") from None


def access_memory_note(user: Any, pk: Any) -> MemoryNote:
    spaces = spaces_visible(user)
    notes = MemoryNote.objects.filter(space__in=spaces).select_related(
        "space", "space__team", "space__owner", "updated_by"
    )
    try:
        return notes.get(pk=int(pk))
    except (ValueError, TypeError, OverflowError, MemoryNote.DoesNotExist):
        raise Http404("No such memory note.") from None


def notes_of(space: MemorySpace, *, q: str = "") -> QuerySet[MemoryNote]:
    """The space's notes: pinned first (hot rules), then the newest; `q` searches titles and
    bodies."""
    notes = MemoryNote.objects.filter(space=space).select_related("updated_by")
    if q:
        notes = notes.filter(Q(title__icontains=q) | Q(body__icontains=q))
    return notes.order_by("-pinned", "-updated_at", "-id")


def note_find(*, space: MemorySpace, title: str) -> MemoryNote | None:
    return MemoryNote.objects.filter(space=space, title=title).first()


def revisions_of(note: MemoryNote) -> QuerySet[MemoryRevision]:
    return MemoryRevision.objects.filter(note=note).select_related("user").order_by("-number")


def revision_of(note: MemoryNote, number: Any) -> MemoryRevision:
    try:
        return revisions_of(note).get(number=int(number))
    except (ValueError, TypeError, OverflowError, MemoryRevision.DoesNotExist):
        raise Http404("No such revision of this note.") from None


def note_tokens(title: str, body: str) -> int:
    """What a note costs in context, by the page's estimate (the heading and the text)."""
    return estimate_tokens(f"## {title}\n{body}")


def space_costs(spaces: list[MemorySpace]) -> dict[int, dict[str, int]]:
    """Per space: its note count and the tokens all its notes cost, estimated."""
    costs = {space.pk: {"notes": 0, "tokens": 0} for space in spaces}
    rows = MemoryNote.objects.filter(space__in=spaces).values_list("space_id", "title", "body")
    for space_id, title, body in rows:
        costs[space_id]["notes"] += 1
        costs[space_id]["tokens"] += note_tokens(title, body)
    return costs


def note_counts(spaces: QuerySet[MemorySpace]) -> QuerySet[MemorySpace]:
    return spaces.annotate(note_count=Count("notes"))


def spaces_selected(selection: list[Any]) -> list[tuple[MemorySpace, str]]:
    """A session's or a preset's `memory` selection as (space, mode), in selection order.
    A space deleted since is left out (deleting one also removes it from selections)."""
    wanted = [(item["space"], item.get("mode", "read")) for item in selection or []]
    found = MemorySpace.objects.in_bulk([space_id for space_id, _ in wanted])
    return [(found[space_id], mode) for space_id, mode in wanted if space_id in found]


class SelectionRefused(ValueError):
    """A memory selection that names a space the user may not select (the API's 400)."""


def selection_check(
    *,
    user: Any,
    team: Any,
    items: list[dict[str, Any]],
    keep: list[Any] = (),  # type: ignore[assignment]
) -> None:
    """Each selected space exists, is visible to `user` and belongs to `team`; none twice,
    and no two with one name (a name is a folder under /memories). A space already in the
    selection (`keep`: the current one) may stay even if `user` cannot see it: a teammate
    keeps a session's selection while changing something else."""
    ids = [item["space"] for item in items]
    kept = {item.get("space") for item in keep if isinstance(item, dict)}
    found = MemorySpace.objects.filter(pk__in=ids).filter(visible_to(user) | Q(pk__in=kept))
    spaces = found.in_bulk()
    seen: dict[str, int] = {}
    for space_id in ids:
        space = spaces.get(space_id)
        if space is None:
            raise SelectionRefused(f"No such memory space: {space_id}.")
        if space.team_id != team.pk:
            raise SelectionRefused(f"Memory space {space_id} belongs to another team.")
        if space.name in seen:
            twice = (
                "is selected twice"
                if seen[space.name] == space_id
                else "shares its name with another selected space"
            )
            raise SelectionRefused(f"Memory space {space_id} ({space.name!r}) {twice}.")
        seen[space.name] = space_id
