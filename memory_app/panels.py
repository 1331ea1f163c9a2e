"""What the memory panels show: a session's selection with what it costs, the cost of a
selection before a session starts, and what a space's own budget leaves out.

Every figure comes from `harness.memory.render_memory`, the function that builds the system
block, so a panel can never disagree with what the model is sent. The session panel reads
the session's own view (its ruler, its selection now); the new-session form and the space
page have no session yet, so they count with the plain estimate, which is cheap and close.
A selection changed from a panel goes through `services.session_memory_set`, exactly as
`PATCH /sessions/{id}` does: checked the same way, and a `memory_changed` notice in the log.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import Max

from harness.memory import MemoryBlock, render_memory
from harness.tokens import Estimate
from memory_app import services
from memory_app.models import MemoryRevision, MemorySpace
from memory_app.selectors import SelectionRefused, selection_check, spaces_selected, spaces_visible
from memory_app.stores import space_value

MODES = {"read": "read", "write": "read and write"}
ESTIMATE = Estimate()


def block_rows(block: MemoryBlock) -> dict[str, dict[str, Any]]:
    """Per space name: its cost and the truncations that name it."""
    rows: dict[str, dict[str, Any]] = {
        cost.space: {"tokens": cost.tokens, "budget": cost.budget, "notes": cost.notes, "cuts": []}
        for cost in block.costs
    }
    for cut in block.truncated:
        rows.setdefault(cut.space, {"cuts": []})["cuts"].append(cut)
    return rows


# The session's side panel ---------------------------------------------------------------


def session_panel(session: Any, block: MemoryBlock, user: Any, **extra: Any) -> dict[str, Any]:
    """The selected spaces in selection order, each with its mode and what the session's next
    call spends on it; the visible spaces not selected yet, to add."""
    by_name = block_rows(block)
    selected = spaces_selected(session.memory)
    rows = [
        {"space": space, "mode": mode, "mode_label": MODES.get(mode, mode),
         **by_name.get(space.name, {"tokens": 0, "budget": space.budget_tokens, "cuts": []})}
        for space, mode in selected
    ]  # fmt: skip
    chosen = {space.pk for space, _ in selected}
    addable = [s for s in spaces_visible(user, team=session.team_id) if s.pk not in chosen]
    return {
        "rows": rows,
        "addable": addable,
        "tokens": block.tokens,
        "truncated": block.truncated,
        **extra,
    }


def posted_selection(session: Any, data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The selection the panel's form asks for: each selected space's `mode_<id>` (empty:
    switch it off), then `add` (a space id) with `add_mode`."""
    memory = []
    for item in session.memory or []:
        space_id = item.get("space")
        mode = data.get(f"mode_{space_id}", item.get("mode", "read"))
        if mode in MODES:
            memory.append({"space": space_id, "mode": mode})
    added = str(data.get("add", "")).strip()
    if added:
        if not added.isdigit() or len(added) > 12:
            raise SelectionRefused(f"No such memory space: {added[:20]}.")
        mode = data.get("add_mode") if data.get("add_mode") in MODES else "read"
        memory.append({"space": int(added), "mode": mode})
    return memory


def session_selection_change(*, session: Any, user: Any, data: Mapping[str, Any]) -> None:
    """Apply the panel's form: checked like the API's PATCH, and a notice when it changed."""
    memory = posted_selection(session, data)
    selection_check(user=user, team=session.team, items=memory, keep=session.memory)
    services.session_memory_set(session=session, memory=memory, user=user)


# The new-session form ---------------------------------------------------------------------


def selection_cost(
    *, user: Any, team: Any, data: Mapping[str, Any], window: int | None
) -> dict[str, Any]:
    """What the form's selection (`memory_<id>` = read | write) would put in every call."""
    spaces = spaces_visible(user, team=team) if team is not None else MemorySpace.objects.none()
    chosen = [
        space_value(space, data[f"memory_{space.pk}"])
        for space in spaces
        if data.get(f"memory_{space.pk}") in MODES
    ]
    block = render_memory(chosen, ESTIMATE)
    return {
        "chosen": len(chosen),
        "tokens": block.tokens,
        "window": window,
        "share": round(100 * block.tokens / window, 1) if window else None,
        "costs": block.costs,
        "truncated": block.truncated,
    }


# The space page ---------------------------------------------------------------------------


def space_budget(space: MemorySpace) -> dict[str, Any]:
    """What the space's own budget keeps in context and leaves out, as a session reads it."""
    block = render_memory([space_value(space, "read")], ESTIMATE)
    cost = block.costs[0]
    left = [title for cut in block.truncated for title in cut.notes]
    return {
        "tokens": cost.tokens,
        "notes": cost.notes,
        "truncated": block.truncated,
        "left_out": set(left),
    }


def space_stamp(space: MemorySpace) -> int:
    """Changes whenever any note of the space does: every change is a revision."""
    return MemoryRevision.objects.filter(space=space).aggregate(last=Max("id"))["last"] or 0
