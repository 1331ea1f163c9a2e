"""Usage and cost: per call (the transcript), per session (`GET /sessions/{id}`), per team
(`GET /team/usage`), the agent's calls apart from the harness's summaries."""

from __future__ import annotations

import pytest

from sessions_app.services import entry_append

PRICES = {"input": 2.0, "cached_input": 0.5, "output": 10.0}


def usage(input_tokens, output_tokens, cached_tokens=0):
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cached_tokens": cached_tokens,
    }


@pytest.fixture
def spent(session):
    """Two agent calls (one mostly cached), a compaction and a handoff summary, a notice
    without usage and an entry a rewind copied (another session's call)."""
    append = entry_append
    append(session_id=session.pk, kind="user", content="hi")
    append(session_id=session.pk, kind="assistant", content="a", data={"usage": usage(1000, 100)})
    append(
        session_id=session.pk,
        kind="assistant",
        content="b",
        data={"usage": usage(2000, 50, 1500), "finish_reason": "length"},
    )
    append(session_id=session.pk, kind="assistant", content="no usage reported", data={})
    append(
        session_id=session.pk,
        kind="boundary",
        content="summary",
        data={"first_kept_seq": 2, "usage": usage(3000, 200, 2800)},
    )
    append(
        session_id=session.pk,
        kind="notice",
        content="handoff",
        data={"code": "handoff", "usage": usage(500, 40)},
    )
    append(session_id=session.pk, kind="notice", content="x", data={"code": "provider_error"})
    append(
        session_id=session.pk,
        kind="assistant",
        content="copied",
        data={"usage": usage(9999, 9999), "copied_from": [1, 2]},
    )
    return session


def test_session_usage_keeps_the_harness_apart_and_counts_cached_tokens(api_for, spent):
    body = api_for("alice").get(f"/sessions/{spent.pk}").json()
    assert body["usage"]["agent"] == {
        "input_tokens": 3000,
        "output_tokens": 150,
        "cached_tokens": 1500,
        "calls": 2,
        "cost": None,
    }
    assert body["usage"]["harness"] == {
        "input_tokens": 3500,
        "output_tokens": 240,
        "cached_tokens": 2800,
        "calls": 2,
        "cost": None,
    }


def test_cost_comes_from_the_cards_prices(api_for, spent, card):
    card.prices = PRICES
    card.save()
    body = api_for("bob").get(f"/sessions/{spent.pk}").json()
    # (3000 - 1500) × 2 + 1500 × 0.5 + 150 × 10 = 5250 per million
    assert body["usage"]["agent"]["cost"] == pytest.approx(0.00525)
    # (3500 - 2800) × 2 + 2800 × 0.5 + 240 × 10 = 5200 per million
    assert body["usage"]["harness"]["cost"] == pytest.approx(0.0052)
    listed = api_for("alice").get("/sessions").json()
    assert listed[0]["usage"] == body["usage"]


def test_team_usage_sums_sessions_per_card(api_for, spent, card, personas):
    from sessions_app.models import ModelCard
    from sessions_app.services import session_create

    card.prices = PRICES
    card.save()
    other = ModelCard.objects.create(team=personas["acme"], name="Other", wire="local", model="m")
    second = session_create(user=personas["bob"][0], team=personas["acme"], fields={"model": other})
    entry_append(session_id=second.pk, kind="assistant", data={"usage": usage(10, 5, 4)})
    body = api_for("bob").get("/team/usage").json()
    assert body["team"] == "acme"
    assert body["agent"]["input_tokens"] == 3010
    assert body["agent"]["cached_tokens"] == 1504
    assert body["agent"]["calls"] == 3
    assert body["agent"]["cost"] == pytest.approx(0.00525)  # the unpriced card adds nothing
    assert body["harness"]["calls"] == 2
    assert [m["name"] for m in body["models"]] == ["Other", "Test card"]
    assert body["models"][0]["agent"]["cost"] is None


def test_team_usage_is_404_for_another_teams_name(api_for, spent):
    assert api_for("charlie").get("/team/usage?team=acme").status_code == 404
    assert api_for("charlie").get("/team/usage").json()["agent"]["calls"] == 0


def test_the_session_page_shows_usage_cost_and_the_truncated_mark(client, personas, spent, card):
    card.prices = PRICES
    card.save()
    client.force_login(personas["bob"][0])
    page = client.get(f"/sessions/{spent.pk}/").content.decode()
    assert "truncated at the output limit" in page
    assert page.count("truncated at the output limit") == 1
    assert "1,500 cached" in page  # the second call's
    assert 'id="usage-line"' in page
    line = page.split('id="usage-line"')[1].split("</p>")[0]
    assert "66% cached" in line  # (1500 + 2800) / (3000 + 3500)
    assert "$0.010" in line  # agent + harness: 0.00525 + 0.0052
