"""Token usage and its cost: per model call, per session, per team.

Usage is what the provider reported on each call, stored in the entry that call produced:
the agent's calls are `assistant` entries (`data.usage`); the harness's own calls are the
summaries it writes, compaction and fork boundaries and `/handoff` documents (`boundary`
entries' and `handoff` notices' `data.usage`). The two are reported apart, so a team sees
what its agent spent and what keeping the context small cost on top.

Sums come from the database in one aggregate query (Django's JSON key transforms work on
SQLite and PostgreSQL alike), grouped by session, never by reading the entries' data.
Entries a rewind copied from another session (`data.copied_from`) are that session's calls,
not this one's, so they are left out. `input_tokens` includes the cached tokens (the
providers' own convention); cost prices the uncached part at the input price and the cached
part at the cached-input price, from the session's card, or is null when the card has none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import BigIntegerField, Case, Count, Q, Sum, When
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast, Coalesce
from django.db.models.lookups import Regex

from sessions_app.models import Entry

COUNTS = ("input_tokens", "output_tokens", "cached_tokens")
SIDES = {
    "agent": Q(kind="assistant"),
    "harness": Q(kind="boundary") | Q(kind="notice", data__code="handoff"),
}
MILLION = 1_000_000
COUNT_PATTERN = r"^[0-9]{1,10}$"  # a token count, at most 10^10: anything else is unknown


def usage_field(name: str) -> Case:
    """A stored count as a number, or NULL when it is not a plain whole number (a provider's
    nonsense that reached the log must count as unknown, never fail the query: PostgreSQL
    refuses to cast "abc" to an integer)."""
    text = KeyTextTransform(name, KeyTransform("usage", "data"))
    return Case(
        When(Regex(text, COUNT_PATTERN), then=Cast(text, BigIntegerField())),
        default=None,
        output_field=BigIntegerField(),
    )


def aggregates() -> dict[str, Any]:
    """One Sum per side and count, and the number of calls that reported usage."""
    fields: dict[str, Any] = {}
    for side, where in SIDES.items():
        for name in COUNTS:
            fields[f"{side}__{name}"] = Coalesce(Sum(usage_field(name), filter=where), 0)
        fields[f"{side}__calls"] = Count(usage_field("input_tokens"), filter=where)
    return fields


def own_calls(**where: Any) -> Any:
    return Entry.objects.filter(**where).exclude(data__has_key="copied_from")


def usage_by_session(session_ids: Iterable[int]) -> dict[int, dict[str, dict[str, int]]]:
    """Session id -> {"agent": counts, "harness": counts}: one grouped query for them all."""
    rows = (
        own_calls(session_id__in=list(session_ids))
        .values("session_id")
        .order_by()
        .annotate(**aggregates())
    )
    return {row["session_id"]: split(row) for row in rows}


def split(row: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    return {
        side: {name: int(row[f"{side}__{name}"] or 0) for name in (*COUNTS, "calls")}
        for side in SIDES
    }


def empty() -> dict[str, dict[str, int]]:
    return {side: dict.fromkeys((*COUNTS, "calls"), 0) for side in SIDES}


def call_cost(usage: Mapping[str, Any] | None, prices: Mapping[str, Any] | None) -> float | None:
    """US dollars for one call's (or a sum's) counts at the card's prices; None when unpriced."""
    if not usage or not prices:
        return None
    try:
        total = int(usage.get("input_tokens") or 0)
        cached = min(int(usage.get("cached_tokens") or 0), total)
        output = int(usage.get("output_tokens") or 0)
        dollars = (
            (total - cached) * float(prices["input"])
            + cached * float(prices["cached_input"])
            + output * float(prices["output"])
        )
    except (KeyError, TypeError, ValueError):
        return None
    return round(dollars / MILLION, 6)


def priced(
    counts: dict[str, dict[str, int]], prices: Mapping[str, Any] | None
) -> dict[str, dict[str, Any]]:
    """The API's `usage`: each side's counts with its `cost` (null when the card has no prices)."""
    return {side: {**sums, "cost": call_cost(sums, prices)} for side, sums in counts.items()}


def session_usage(session: Any) -> dict[str, dict[str, Any]]:
    counts = usage_by_session([session.pk]).get(session.pk) or empty()
    return priced(counts, session.model.prices)


def team_usage(team: Any) -> dict[str, Any]:
    """The team's usage, whole and per model card: one query grouped by card."""
    rows = (
        own_calls(session__team=team)
        .values("session__model_id", "session__model__name", "session__model__prices")
        .order_by()
        .annotate(**aggregates())
    )
    cards = []
    for row in rows:
        cards.append(
            {
                "model": row["session__model_id"],
                "name": row["session__model__name"],
                **priced(split(row), row["session__model__prices"]),
            }
        )
    cards.sort(key=lambda card: str(card["name"]))
    return {"team": team.name, **totals(cards), "models": cards}


def totals(cards: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The sides summed over the cards; cost sums what is priced, null if nothing is."""
    result: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        sums: dict[str, Any] = {
            name: sum(c[side][name] for c in cards) for name in (*COUNTS, "calls")
        }
        costs = [c[side]["cost"] for c in cards if c[side]["cost"] is not None]
        sums["cost"] = round(sum(costs), 6) if costs else None
        result[side] = sums
    return result


def overall(spent: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Both sides together, for a one-line summary: tokens, cached share, cost."""
    counts = {name: sum(int(side[name]) for side in spent.values()) for name in (*COUNTS, "calls")}
    costs = [side["cost"] for side in spent.values() if side.get("cost") is not None]
    return {**counts, "cost": round(sum(costs), 6) if costs else None}
