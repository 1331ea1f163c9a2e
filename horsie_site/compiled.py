"""The hot queries, compiled once per process and database, then run with new parameters.

Building and compiling a queryset costs Django 0.2-0.4 ms; running the SQL it makes on
SQLite costs some 0.01 ms. A turn makes a dozen small queries of the same few shapes, so
most of its database time went to making the same SQL again. `select` and `update` take a
function that builds the queryset from its parameters, build it once with marker values
in their place, keep the SQL, and find where each marker landed among the SQL's parameters.
Each call then sends the kept SQL with the call's values in those places, and the queryset's
own iterable turns the rows into what the queryset itself would have given: model instances
with what they select related, or values, converted by its compiler (JSON decoded, SQLite's
dates parsed).

What may be a parameter: an `int`, a `str` or an aware `datetime`, values the ORM passes to
the database as they are (a datetime adapted as a field's value is); an int beyond 64 bits
matches no row, as in the ORM. The builder must make
the same SQL whatever the values (no branching on them, no lists that change length): it
runs once, with markers.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, ParamSpec, TypeVar, cast

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import Model, QuerySet, sql

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")
INT_MARK = 2_147_480_000  # within a 32-bit column, as the ORM checks; no constant of ours
EPOCH = datetime(1901, 1, 1, tzinfo=UTC)


class Compiled:
    """One statement's SQL, and where each of the call's arguments goes in its parameters."""

    def __init__(self, built: Any, compiler: Any, marks: list[Any]) -> None:
        self.built = built
        self.compiler = compiler
        self.sql, params = compiler.as_sql()
        self.params = list(params)
        self.slots: list[tuple[int, int]] = []  # (parameter index, argument index)
        for index, param in enumerate(self.params):
            for arg, value in enumerate(marks):
                if same_kind(param, value) and param == value:
                    self.slots.append((index, arg))
        missing = set(range(len(marks))) - {arg for _, arg in self.slots}
        assert not missing, f"arguments {sorted(missing)} are not parameters of: {self.sql}"
        # What turns each column's value into Python's depends on the columns alone: found
        # once here, not on every call (it was a third of a compiled select's own time).
        selected = getattr(compiler, "select", None) or ()  # an update selects nothing
        columns = [column[0] for column in selected[: getattr(compiler, "col_count", 0)]]
        self.converters = compiler.get_converters(columns) if columns else {}

    def bound(self, args: tuple[Any, ...], connection: Any) -> list[Any]:
        params = list(self.params)
        for index, arg in self.slots:
            value = adapt(connection, args[arg])
            kind = type(params[index])  # an int the driver wants typed (psycopg's Int8) stays so
            params[index] = kind(value) if kind is not int and isinstance(value, int) else value
        return params


class Statement(Generic[P, R]):
    """A statement built by `build`, compiled per database on first use (or by
    `compile_all`, at a process's start)."""

    def __init__(self, build: Callable[P, Any], kinds: tuple[type, ...]) -> None:
        self.build = build
        self.kinds = kinds
        self.kept: dict[tuple[str, str], Compiled] = {}
        STATEMENTS.append(self)

    def compiled(self, connection: Any) -> Compiled:
        key = (connection.alias, str(connection.settings_dict["NAME"]))
        kept = self.kept.get(key)
        if kept is None:
            marks = [mark(kind, index) for index, kind in enumerate(self.kinds)]
            built = cast(Any, self.build)(*marks)
            adapted = [adapt(connection, value) for value in marks]
            kept = self.kept[key] = Compiled(built, self.compiler(built, connection), adapted)
        return kept

    def compiler(self, built: Any, connection: Any) -> Any:
        raise NotImplementedError

    def checked(self, args: tuple[Any, ...]) -> tuple[Any, Compiled] | None:
        """The connection and the statement; None when an int is outside 64 bits: no row
        holds one, as the ORM's own lookups answer."""
        for value, kind in zip(args, self.kinds, strict=True):
            if not isinstance(value, kind) or isinstance(value, bool):
                raise TypeError(f"{value!r} is not a {kind.__name__}")
            if kind is int and not -(2**63) <= value < 2**63:
                return None
        connection = connections[DEFAULT_DB_ALIAS]
        return connection, self.compiled(connection)


class Select(Statement[P, R]):
    """Iterated as the queryset itself would be (model instances with what they select
    related, or values), by the queryset's own iterable, from the kept SQL."""

    def compiler(self, built: QuerySet[Any, Any], connection: Any) -> Any:
        return built.query.get_compiler(connection=connection)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> list[R]:
        checked = self.checked(args)
        if checked is None:
            return []
        connection, compiled = checked
        run = copy.copy(compiled.compiler)
        run.connection = connection
        bound = compiled.sql, compiled.bound(args, connection)
        run.as_sql = lambda *_, **__: bound
        run.get_converters = lambda _: compiled.converters
        queryset = compiled.built._chain()
        queryset.query.get_compiler = lambda *_, **__: run
        return list(queryset._iterable_class(queryset))


class Update(Statement[P, int]):
    def compiler(self, built: tuple[QuerySet[Any, Any], dict[str, Any]], connection: Any) -> Any:
        queryset, values = built
        query = queryset.query.chain(sql.UpdateQuery)
        query.add_update_values(values)
        query.clear_select_clause()
        assert not query.related_updates, "an update of one table only"
        return query.get_compiler(connection=connection)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> int:
        checked = self.checked(args)
        if checked is None:
            return 0
        connection, compiled = checked
        with (
            transaction.mark_for_rollback_on_error(using=connection.alias),
            connection.cursor() as cursor,
        ):
            cursor.execute(compiled.sql, compiled.bound(args, connection))
            return int(cursor.rowcount)


M = TypeVar("M", bound=Model)


class Insert(Generic[M]):
    """One new row of `model`, as `model.objects.create(**values)` makes it, from SQL made
    once per database: the instance is built as usual (defaults applied), each column's
    value prepared as the ORM's save prepares it (`pre_save`, `get_db_prep_save`: an
    `auto_now_add` is set, JSON encoded, a datetime adapted), and the kept `INSERT … RETURNING`
    sent. No `pre_save`/`post_save` signal is sent, and the model's own `save` is not called:
    use it for models that have neither (a test checks the one it is used for)."""

    def __init__(self, model: type[M]) -> None:
        self.model = model
        self.fields = [
            f for f in model._meta.local_concrete_fields if not (f.primary_key or f.generated)
        ]
        self.kept: dict[tuple[str, str], str] = {}
        STATEMENTS.append(self)

    def compiled(self, connection: Any) -> str:
        return self.statement(connection, self.model())

    def __call__(self, **values: Any) -> M:
        row = self.model(**values)
        connection = connections[DEFAULT_DB_ALIAS]
        statement = self.statement(connection, row)  # first: making it runs `pre_save` too
        params = [f.get_db_prep_save(f.pre_save(row, True), connection) for f in self.fields]
        with (
            transaction.mark_for_rollback_on_error(using=connection.alias),
            connection.cursor() as cursor,
        ):
            cursor.execute(statement, params)
            row.pk = cursor.fetchone()[0]
        row._state.adding, row._state.db = False, connection.alias
        return row

    def statement(self, connection: Any, row: M) -> str:
        key = (connection.alias, str(connection.settings_dict["NAME"]))
        kept = self.kept.get(key)
        if kept is None:
            query = sql.InsertQuery(self.model)
            query.insert_values(self.fields, [row])
            compiler = query.get_compiler(connection=connection)
            compiler.returning_fields = [self.model._meta.pk]
            [(kept, _)] = compiler.as_sql()
            assert kept.count("%s") == len(self.fields), kept  # one plain placeholder a column
            self.kept[key] = kept
        return kept


def select(*kinds: type) -> Callable[[Callable[P, QuerySet[Any, R]]], Select[P, R]]:
    """`@select(int, str)` over a function of those parameters that returns a queryset:
    calling it returns the queryset's rows (`list(queryset)`), from SQL compiled once."""
    return lambda build: Select(build, kinds)


def update(
    *kinds: type,
) -> Callable[[Callable[P, tuple[QuerySet[Any, Any], dict[str, Any]]]], Update[P]]:
    """`@update(int, datetime)` over a function returning `(queryset, values)`: calling it
    runs `queryset.update(**values)` from SQL compiled once, and returns the rows changed."""
    return lambda build: Update(build, kinds)


STATEMENTS: list[Statement[Any, Any] | Insert[Any]] = []


def compile_all() -> int:
    """Compile every statement for the default database now, with the URLconf (and so every
    module that defines one) imported first: at a process's start, off any request, so its
    first turn does not pay for them. Returns how many compiled; one that fails is logged
    and left to fail where it is used."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018  (imports the views, the APIs and their queries)
    connection = connections[DEFAULT_DB_ALIAS]
    done = 0
    try:
        for statement in list(STATEMENTS):
            try:
                statement.compiled(connection)
                done += 1
            except Exception:
                log.exception("a statement could not be compiled: %s", statement.build)
    finally:
        connection.close()
    return done


def compile_logged() -> None:
    log.info("%d statements compiled", compile_all())


def mark(kind: type, index: int) -> Any:
    if kind is int:
        return INT_MARK + index
    if kind is str:
        return f"\ue000compiled-parameter-{index}\ue000"
    if kind is datetime:
        return EPOCH + timedelta(seconds=index + 1)
    raise TypeError(f"a compiled statement takes int, str and datetime parameters, not {kind}")


def same_kind(param: Any, value: Any) -> bool:
    if isinstance(value, int):
        return isinstance(param, int) and not isinstance(param, bool)
    return type(param) is type(value)


def adapt(connection: Any, value: Any) -> Any:
    return connection.ops.adapt_datetimefield_value(value) if isinstance(value, datetime) else value
