"""Statements compiled once (`horsie_site.compiled`) answer what their querysets answer, for
every value, on the database the suite runs on (SQLite, and PostgreSQL in CI)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from horsie_site import compiled
from sessions_app.models import Entry, Session
from sessions_app.services import entry_append

pytestmark = pytest.mark.django_db(transaction=True)


@compiled.select(int, int)
def tail(session_id: int, seq: int) -> QuerySet[Entry, tuple]:
    rows = Entry.objects.filter(session_id=session_id, seq__gte=seq).order_by("seq")
    return rows.values_list("seq", "kind", "data", "created_at")


@compiled.select(int, str)
def with_card(session_id: int, title: str) -> QuerySet[Session]:
    return Session.objects.select_related("model", "team").filter(pk=session_id, title=title)


@compiled.update(datetime, int, datetime)
def touched(now: datetime, session_id: int, before: datetime) -> tuple[QuerySet, dict]:
    return Session.objects.filter(pk=session_id, updated_at__lt=before), {"updated_at": now}


@pytest.fixture
def logged(session):
    for n in range(4):
        entry_append(session_id=session.pk, kind="user", content=f"m{n}", data={"n": n, "x": [n]})
    return session


def test_a_select_gives_the_querysets_rows_for_each_value(logged):
    for seq in (1, 3, 5):
        assert tail(logged.pk, seq) == list(tail.build(logged.pk, seq))
    assert tail(logged.pk, 3)[0][2] == {"n": 2, "x": [2]}  # JSON decoded
    assert isinstance(tail(logged.pk, 1)[0][3], datetime)  # a date, on SQLite too


def test_a_select_of_models_fills_what_it_selects_related(logged):
    [row] = with_card(logged.pk, "Acme work")
    assert row == Session.objects.get(pk=logged.pk)
    assert row.model.name == logged.model.name and row.team.name == "acme"
    assert "model" in row._state.fields_cache  # no further query for the card
    assert with_card(logged.pk, "another title") == []


def test_an_update_changes_what_its_queryset_would_and_counts_it(logged):
    now = timezone.now() + timedelta(days=1)
    assert touched(now, logged.pk, now - timedelta(days=10)) == 0
    assert touched(now, logged.pk, now) == 1
    assert Session.objects.get(pk=logged.pk).updated_at == now


def test_an_int_beyond_64_bits_matches_no_row(logged):
    assert tail(logged.pk, 2**70) == []
    assert with_card(-(2**64), "Acme work") == []
    assert touched(timezone.now(), 2**63, timezone.now()) == 0


def test_a_value_of_another_type_is_refused(logged):
    with pytest.raises(TypeError):
        tail(str(logged.pk), 1)
    with pytest.raises(TypeError):
        tail(True, 1)
    with pytest.raises(TypeError):
        touched("now", logged.pk, timezone.now())


def test_a_builder_that_drops_a_parameter_is_refused_when_compiled(logged):
    unused = compiled.select(int, int)(lambda session_id, seq: Entry.objects.filter(seq=1))
    with pytest.raises(AssertionError, match="not parameters"):
        unused(logged.pk, 1)


def test_a_select_for_update_runs_inside_the_callers_transaction(logged):
    locked = compiled.select(int)(
        lambda session_id: Session.objects.select_for_update().filter(pk=session_id)
    )
    with transaction.atomic():
        assert [s.pk for s in locked(logged.pk)] == [logged.pk]


def test_a_value_equal_to_a_marker_is_sent_as_any_other(logged):
    stamp = datetime(1901, 1, 1, 0, 0, 1, tzinfo=UTC)  # the first datetime marker
    assert touched(stamp, logged.pk, timezone.now() + timedelta(days=1)) == 1
    assert Session.objects.get(pk=logged.pk).updated_at == stamp
    assert touched(timezone.now(), logged.pk, stamp + timedelta(seconds=1)) == 1


def test_compile_all_compiles_every_statement_the_turn_uses_ahead():
    from django.db import connection

    from sessions_app.waiting import status_of
    from teams_app.selectors import token_with_user

    assert compiled.compile_all() >= 15
    key = (connection.alias, str(connection.settings_dict["NAME"]))
    assert key in status_of.kept and key in token_with_user.kept  # the API's, via the URLconf


def test_an_insert_makes_the_row_the_orm_would(session, personas):
    alice = personas["alice"][0]
    before = timezone.now()
    values = {
        "session_id": session.pk, "seq": 900, "kind": "user", "content": "héllo ✓",
        "data": {"nested": [1, {"two": None}], "text": "ü"}, "tokens": 12, "author": alice,
    }  # fmt: skip
    made = compiled.Insert(Entry)(**values)
    by_orm = Entry.objects.create(**{**values, "seq": 901})
    assert made.pk is not None and not made._state.adding and made._state.db == "default"
    assert made.created_at >= before
    read, orm_read = Entry.objects.get(pk=made.pk), Entry.objects.get(pk=by_orm.pk)
    fields = ("session_id", "kind", "content", "data", "tokens", "author_id")
    assert [getattr(read, f) for f in fields] == [getattr(orm_read, f) for f in fields]
    assert (read.seq, read.created_at) == (900, made.created_at)
    defaults = compiled.Insert(Entry)(session_id=session.pk, seq=902, kind="notice")
    assert Entry.objects.values_list("content", "data", "tokens").get(pk=defaults.pk) == (
        "",
        {},
        None,
    )


def test_an_insert_that_fails_inside_a_transaction_rolls_it_back(session):
    insert = compiled.Insert(Entry)

    def twice() -> None:
        with transaction.atomic():
            insert(session_id=session.pk, seq=910, kind="user")
            insert(session_id=session.pk, seq=910, kind="user")  # the same seq: one_seq refuses

    with pytest.raises(IntegrityError):
        twice()
    assert not Entry.objects.filter(session=session, seq=910).exists()


def test_entries_have_no_save_signals_for_the_insert_to_skip():
    from django.db.models import signals

    for signal in (signals.pre_save, signals.post_save, signals.pre_init, signals.post_init):
        assert not signal.has_listeners(Entry), signal
