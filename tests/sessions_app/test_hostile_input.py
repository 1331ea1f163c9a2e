"""Hostile input never breaks a page or the API, and bad stored numbers never break a reader.

Text that cannot be stored (NUL bytes, lone surrogates) is refused with 400 and stores
nothing; numbers parsed from text are bounded before `int()`; `null` in a PATCH is refused
where the field may not be null; windows, seqs and `compact_at` have upper bounds and are
finite. An assistant entry whose `usage` holds nonsense leaves every reader answering.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from harness.state import prompt_tokens, token_count
from horsie_site.inputs import bounded_int, text_problem
from sessions_app import scheduler, services
from sessions_app.models import AgentPreset, Entry, ModelCard, QueuedInput, Session

pytestmark = pytest.mark.django_db(transaction=True)

NUL = "before\x00after"
SURROGATE_JSON = '"before \\ud800 after"'  # a lone surrogate, as JSON escapes it
HUGE = "9" * 5000


def test_bounded_int_takes_only_ascii_digits_in_range():
    assert bounded_int("42", high=100) == 42
    assert bounded_int(" 7 ", high=100) == 7
    for text in ("²", "٣", "-1", "1e3", "", None, HUGE, "101", "0x10"):
        assert bounded_int(text, high=100) is None, text
    assert bounded_int("0", low=1, high=100) is None


def test_text_problem_names_nul_and_lone_surrogates():
    assert text_problem("fine ✓") is None
    assert "NUL" in text_problem(NUL)
    assert "U+D800" in text_problem("x\ud800")


# The API -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        '{"text": "a\\u0000b"}',
        '{"text": ' + SURROGATE_JSON + "}",
        '{"text": "ok", "\\u0000": 1}',
    ],
)
def test_messages_with_unstorable_text_are_400_and_store_nothing(api_for, session, body):
    r = api_for("alice").post(f"/sessions/{session.pk}/messages", body)
    assert r.status_code == 400, r.content
    assert "NUL" in r.json()["detail"] or "surrogate" in r.json()["detail"]
    assert not QueuedInput.objects.exists() and not Entry.objects.exists()


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/models", '{"name": "a\\u0000", "wire": "local", "model": "m"}'),
        ("/presets", '{"name": ' + SURROGATE_JSON + "}"),
        ("/sessions", '{"title": "t\\u0000"}'),
        ("/sessions", '{"system_prompt": ' + SURROGATE_JSON + "}"),
    ],
)
def test_creates_with_unstorable_text_are_400(api_for, personas, path, body):
    before = (ModelCard.objects.count(), AgentPreset.objects.count(), Session.objects.count())
    r = api_for("alice").post(path, body)
    assert r.status_code == 400, r.content
    assert "detail" in r.json()
    after = (ModelCard.objects.count(), AgentPreset.objects.count(), Session.objects.count())
    assert after == before


@pytest.mark.parametrize("depth", [500, 100_000])
def test_deeply_nested_bodies_are_refused_not_500(api_for, session, depth):
    body = '{"text": ' + "[" * depth + "]" * depth + "}"
    r = api_for("alice").post(f"/sessions/{session.pk}/messages", body)
    assert r.status_code in (400, 422), r.content[:200]


def test_a_query_string_with_nul_is_400(api_for, session):
    r = api_for("alice").get("/sessions?q=a%00b")
    assert r.status_code == 400 and "NUL" in r.json()["detail"]


@pytest.mark.parametrize(
    "text", ["/rewind ²", f"/rewind {HUGE}", "/rewind -1", "/rewind", f"/rewind {HUGE} go on"]
)
def test_rewind_commands_with_bad_seqs_are_400(api_for, session, text):
    r = api_for("alice").post(f"/sessions/{session.pk}/messages", {"text": text})
    assert r.status_code == 400, r.content
    assert "SEQ" in r.json()["detail"]
    assert Session.objects.count() == 1


@pytest.mark.parametrize("seq", [0, 2**53, int(HUGE[:40])])
def test_rewind_and_summary_seqs_are_bounded(api_for, session, seq):
    api = api_for("alice")
    assert api.post(f"/sessions/{session.pk}/rewind", {"seq": seq}).status_code == 422
    body = {"boundary": seq, "summary": "s"}
    assert api.post(f"/sessions/{session.pk}/summary", body).status_code == 422


def test_a_huge_seq_in_a_query_or_path_is_refused_not_500(api_for, session):
    api = api_for("alice")
    assert api.get(f"/sessions/{session.pk}/entries?after={HUGE}").status_code == 422
    assert api.get(f"/sessions/{session.pk}/entries?before=99999999999999999999").status_code == 422
    assert api.get(f"/sessions/{HUGE}").status_code in (404, 422)
    assert api.get("/sessions/99999999999999999999").status_code in (404, 422)


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/models/{card}", "name"),
        ("/models/{card}", "wire"),
        ("/models/{card}", "model"),
        ("/models/{card}", "max_output_tokens"),
        ("/presets/{preset}", "name"),
        ("/presets/{preset}", "system_prompt"),
        ("/presets/{preset}", "max_steps"),
        ("/presets/{preset}", "memory"),
        ("/presets/{preset}", "auto_compact"),
        ("/sessions/{session}", "title"),
        ("/sessions/{session}", "skills"),
        ("/sessions/{session}", "auto_compact"),
    ],
)
def test_patch_refuses_null_for_a_field_that_may_not_be_null(
    api_for, personas, card, session, path, field
):
    preset = AgentPreset.objects.create(team=personas["acme"], name="p", model=card)
    url = path.format(card=card.pk, preset=preset.pk, session=session.pk)
    r = api_for("alice").patch(url, {field: None})
    assert r.status_code == 422, r.content
    assert field in str(r.json()["detail"])


def test_patch_takes_null_where_it_means_something(api_for, personas, card, session):
    api = api_for("alice")
    assert (
        api.patch(f"/models/{card.pk}", {"context_window": None}).json()["context_window"] is None
    )
    assert api.patch(f"/sessions/{session.pk}", {"compact_at": 0.5}).json()["compact_at"] == 0.5
    assert api.patch(f"/sessions/{session.pk}", {"compact_at": None}).json()["compact_at"] is None


@pytest.mark.parametrize(
    "body",
    [
        {"context_window": 2**31},
        {"context_window": 2**63},
        {"context_window": 10_000_001},
        {"max_output_tokens": 2**31},
    ],
)
def test_numbers_have_upper_bounds_both_databases_hold(api_for, card, body):
    api = api_for("alice")
    assert api.patch(f"/models/{card.pk}", body).status_code == 422
    create = {"name": "c", "wire": "local", "model": "m", **body}
    assert api.post("/models", create).status_code == 422


@pytest.mark.parametrize("raw", ["Infinity", "-Infinity", "NaN", "1e400", "10000001"])
def test_compact_at_is_finite_and_bounded(api_for, session, card, raw):
    api = api_for("alice")
    assert api.patch(f"/sessions/{session.pk}", f'{{"compact_at": {raw}}}').status_code == 422
    assert api.post("/sessions", f'{{"compact_at": {raw}}}').status_code == 422
    assert api.post("/presets", f'{{"name": "p", "compact_at": {raw}}}').status_code == 422
    assert api.get(f"/sessions/{session.pk}").json()["compact_at"] is None


@pytest.mark.parametrize("stored", [float("inf"), float("-inf"), float("nan")])
def test_a_non_finite_compact_at_stored_earlier_is_served_as_null(
    api_for, personas, card, session, stored
):
    preset = AgentPreset.objects.create(team=personas["acme"], name="p", compact_at=stored)
    Session.objects.filter(pk=session.pk).update(compact_at=stored)
    api = api_for("alice")
    assert api.get(f"/sessions/{session.pk}").json()["compact_at"] is None
    assert api.get("/sessions").json()[0]["compact_at"] is None
    assert api.get(f"/presets/{preset.pk}").json()["compact_at"] is None


def test_unknown_api_paths_and_wrong_methods_answer_json(api_for, client):
    api = api_for("alice")
    for path in ("/nothing", "/sessions/1/nothing", "/sessions/", "/models/1/x"):
        r = api.get(path)
        assert r.status_code == 404, path
        assert r["Content-Type"].startswith("application/json") and r.json()["detail"]
    r = api.call("put", "/sessions")
    assert r.status_code == 405 and "PUT" in r.json()["detail"]
    assert client.get("/api/v1/nothing").json()["detail"]


# Pages and forms -----------------------------------------------------------------------


@pytest.fixture
def alice_browser(client, personas):
    client.force_login(personas["alice"][0])
    return client


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("sessions:send", {"text": NUL}),
        ("sessions:answer", {"question": "q1", "text": NUL}),
        ("sessions:summary", {"boundary": "1", "summary": NUL}),
        ("sessions:fork", {"document": NUL}),
        ("sessions:rewind", {"seq": "1", "text": NUL}),
    ],
)
def test_forms_with_nul_are_400_and_store_nothing(alice_browser, session, name, data):
    services.entry_append(session_id=session.pk, kind="user", content="hello")
    r = alice_browser.post(reverse(name, args=[session.pk]), data)
    assert r.status_code == 400
    assert "NUL" in r.content.decode()
    assert Entry.objects.count() == 1 and Session.objects.count() == 1
    assert not QueuedInput.objects.exists()


def test_the_new_session_form_refuses_nul(alice_browser, card):
    r = alice_browser.post(reverse("sessions:new"), {"title": NUL, "model": card.pk})
    assert r.status_code == 400 and not Session.objects.exists()


@pytest.mark.parametrize("seq", ["²", HUGE, "-3", "1.5", ""])
def test_form_seqs_are_validated_before_int(alice_browser, session, scripted, seq):
    from asgiref.sync import async_to_sync

    from sessions_app.waiting import wait_settled

    services.entry_append(session_id=session.pk, kind="user", content="hello")
    for name, field in (("sessions:rewind", "seq"), ("sessions:summary", "boundary")):
        r = alice_browser.post(reverse(name, args=[session.pk]), {field: seq, "summary": "s"})
        assert r.status_code == 400, (name, seq)
    r = alice_browser.post(reverse("sessions:fork", args=[session.pk]), {"notice": seq})
    assert r.status_code == 302  # `notice` only says where an error would be shown
    fork = Session.objects.get(parent=session, kind="fork")
    async_to_sync(wait_settled)(fork.pk, 10)  # its runner's summary is written before teardown
    earlier = reverse("sessions:entries", args=[session.pk])
    assert alice_browser.get(earlier, {"before": seq}).status_code == 400


def test_huge_ids_in_page_paths_are_404(alice_browser, session):
    for path in (f"/sessions/{HUGE}/", "/sessions/99999999999999999999/",
                 f"/sessions/{session.pk}/entries/99999999999999999999/",
                 f"/sessions/{session.pk}/entries/{HUGE}/"):  # fmt: skip
        assert alice_browser.get(path).status_code == 404, path


def test_the_team_switcher_validates_its_number(alice_browser, personas):
    for team in ("²", HUGE, ""):
        assert alice_browser.post(reverse("teams:switch"), {"team": team}).status_code == 400
    other = personas["globex"].pk
    assert alice_browser.post(reverse("teams:switch"), {"team": other}).status_code == 404


# Stored nonsense from a provider -------------------------------------------------------


NONSENSE = ["abc", -5, None, 12.5, 10**30, True, {"n": 1}, [3]]


@pytest.mark.parametrize("value", NONSENSE)
def test_prompt_tokens_ignores_nonsense_usage(value):
    assert token_count(value) is None
    assert prompt_tokens({"usage": {"input_tokens": value}}) is None
    assert prompt_tokens({"usage": {"input_tokens": value}, "prompt_tokens_estimate": 90}) == 90
    assert prompt_tokens({"usage": value, "prompt_tokens_estimate": 90}) == 90


@pytest.mark.parametrize("value", NONSENSE)
def test_every_reader_answers_with_a_poisoned_usage_stored(api_for, alice_browser, session, value):
    services.entry_append(session_id=session.pk, kind="user", content="hello")
    services.entry_append(
        session_id=session.pk,
        kind="assistant",
        content="reply",
        data={
            "usage": {"input_tokens": value, "output_tokens": value},
            "prompt_tokens_estimate": value,
        },
    )
    services.entry_append(
        session_id=session.pk, kind="assistant", content="again", data={"usage": value}
    )
    api = api_for("alice")
    for path in ("/sessions", f"/sessions/{session.pk}", f"/sessions/{session.pk}/state",
                 f"/sessions/{session.pk}/context", f"/sessions/{session.pk}/entries"):  # fmt: skip
        assert api.get(path).status_code == 200, path
    for name in ("detail", "meter", "chart", "context"):
        page = alice_browser.get(reverse(f"sessions:{name}", args=[session.pk]))
        assert page.status_code == 200, name
    assert alice_browser.get(reverse("sessions:list")).status_code == 200


def test_one_failing_session_does_not_stop_recovery_of_the_others(
    personas, card, session, monkeypatch
):
    other = services.session_create(
        user=personas["charlie"][0], team=personas["globex"], fields={"title": "Globex"}
    )
    started = []

    def turn_start(session_id, queued_id=None):
        started.append(session_id)
        if session_id == session.pk:
            raise RuntimeError("poisoned")

    Session.objects.update(lease_owner="dead", lease_expires_at="2000-01-01T00:00:00Z")
    monkeypatch.setattr(scheduler, "turn_start", turn_start)
    assert scheduler.tick() == (0, 1)
    assert sorted(started) == sorted([session.pk, other.pk])


def test_a_turn_that_fails_to_start_releases_its_lease(session, monkeypatch):
    QueuedInput.objects.create(session=session, text="hi")

    def broken(session_id, *direct):
        raise RuntimeError("poisoned")

    monkeypatch.setattr(services, "inputs_enter_log", broken)
    with pytest.raises(RuntimeError):
        services.turn_start(session.pk)
    session.refresh_from_db()
    assert session.lease_owner is None and session.status == "idle"
