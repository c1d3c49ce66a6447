"""SQL expressions whose spelling differs between SQLite and PostgreSQL, each one expression the stores build
once and SQLAlchemy compiles for the connection's dialect.

A store writes ``contains(column, value)`` where it would have written SQLite's ``instr``; the statement it
builds runs unchanged on either engine. Inserts that skip rows already there are ``insert_ignoring``: each
dialect's own ``ON CONFLICT DO NOTHING`` (SQLite's ``INSERT OR IGNORE`` spelled the way PostgreSQL also reads).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.functions import FunctionElement


class _Contains(FunctionElement[bool]):
    """Whether the first text holds the second anywhere (case as stored)."""

    type = sa.Boolean()
    inherit_cache = True
    name = "hangar_contains"


class _StartsWith(FunctionElement[bool]):
    type = sa.Boolean()
    inherit_cache = True
    name = "hangar_starts_with"


class _EndsWith(FunctionElement[bool]):
    type = sa.Boolean()
    inherit_cache = True
    name = "hangar_ends_with"


class _JsonRows(FunctionElement[str]):
    """An aggregate: the JSON text of an array holding one array per row (``[[a, b, c], ...]``); ``[]`` or NULL
    when no row."""

    type = sa.Text()
    inherit_cache = True
    name = "hangar_json_rows"


class _Unindexed(FunctionElement[Any]):
    """A column SQLite must not take an index for (a unary plus); PostgreSQL, which plans from statistics, reads
    the column itself."""

    inherit_cache = True
    name = "hangar_unindexed"


def contains(column: ColumnElement[Any], value: str) -> ColumnElement[bool]:
    return _Contains(column, sa.literal(value, sa.Text))


# Above every character: ``value <= text < value + _TOP`` holds for each text starting with ``value``.
_TOP = "\U0010ffff"


def starts_with(column: ColumnElement[Any], value: str) -> ColumnElement[bool]:
    """On SQLite also a range on the column, which lets it walk an index (the substr keeps the meaning exact);
    PostgreSQL's collations need not order a prefix's texts together, so it asks ``starts_with`` alone."""
    return _StartsWith(column, sa.literal(value, sa.Text), sa.literal(len(value)), sa.literal(value + _TOP, sa.Text))


def ends_with(column: ColumnElement[Any], value: str) -> ColumnElement[bool]:
    return _EndsWith(column, sa.literal(value, sa.Text), sa.literal(len(value)))


def json_rows(*columns: ColumnElement[Any]) -> ColumnElement[str]:
    return _JsonRows(*columns)


def unindexed(column: ColumnElement[Any]) -> ColumnElement[Any]:
    element = _Unindexed(column)
    element.type = column.type
    return element


def insert_ignoring(dialect: str, table: sa.Table) -> Any:
    """An INSERT into ``table`` that skips a row a unique key already holds, in ``dialect``'s own form."""
    if dialect == "sqlite":
        return sqlite_insert(table).on_conflict_do_nothing()
    # Imported here: SQLAlchemy's PostgreSQL dialect loads every driver's module (about 0.1 s), which a command
    # on SQLite would pay at start-up for nothing.
    from sqlalchemy.dialects.postgresql import insert as postgresql_insert

    return postgresql_insert(table).on_conflict_do_nothing()


def _args(compiler: SQLCompiler, element: FunctionElement[Any], **kw: Any) -> list[str]:
    return [compiler.process(c, **kw) for c in element.clauses]


@compiles(_Contains, "sqlite")
def _contains_sqlite(element: _Contains, compiler: SQLCompiler, **kw: Any) -> str:
    text, part = _args(compiler, element, **kw)
    return f"(instr({text}, {part}) > 0)"


@compiles(_Contains, "postgresql")
def _contains_postgresql(element: _Contains, compiler: SQLCompiler, **kw: Any) -> str:
    text, part = _args(compiler, element, **kw)
    return f"(strpos({text}, {part}) > 0)"


@compiles(_StartsWith, "sqlite")
def _starts_sqlite(element: _StartsWith, compiler: SQLCompiler, **kw: Any) -> str:
    text, part, n, top = _args(compiler, element, **kw)
    return f"({text} >= {part} AND {text} < {top} AND substr({text}, 1, {n}) = {part})"


@compiles(_StartsWith, "postgresql")
def _starts_postgresql(element: _StartsWith, compiler: SQLCompiler, **kw: Any) -> str:
    text, part, _, _ = _args(compiler, element, **kw)
    return f"starts_with({text}, {part})"


@compiles(_EndsWith, "sqlite")
def _ends_sqlite(element: _EndsWith, compiler: SQLCompiler, **kw: Any) -> str:
    text, part, n = _args(compiler, element, **kw)
    return f"(substr({text}, -{n}) = {part})"


@compiles(_EndsWith, "postgresql")
def _ends_postgresql(element: _EndsWith, compiler: SQLCompiler, **kw: Any) -> str:
    # ``right`` counts characters, as SQLite's substr does; a negative start means something else here.
    text, part, n = _args(compiler, element, **kw)
    return f"(right({text}, {n}) = {part})"


@compiles(_JsonRows, "sqlite")
def _json_rows_sqlite(element: _JsonRows, compiler: SQLCompiler, **kw: Any) -> str:
    return f"json_group_array(json_array({', '.join(_args(compiler, element, **kw))}))"


@compiles(_JsonRows, "postgresql")
def _json_rows_postgresql(element: _JsonRows, compiler: SQLCompiler, **kw: Any) -> str:
    # As text, so both engines hand the reader the same thing (psycopg would decode a json value).
    return f"CAST(json_agg(json_build_array({', '.join(_args(compiler, element, **kw))})) AS TEXT)"


@compiles(_Unindexed, "sqlite")
def _unindexed_sqlite(element: _Unindexed, compiler: SQLCompiler, **kw: Any) -> str:
    (column,) = _args(compiler, element, **kw)
    return f"+{column}"


@compiles(_Unindexed, "postgresql")
def _unindexed_postgresql(element: _Unindexed, compiler: SQLCompiler, **kw: Any) -> str:
    (column,) = _args(compiler, element, **kw)
    return column
