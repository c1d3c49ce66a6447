"""Every part's migrations build, on PostgreSQL as on SQLite, the schema its table definitions declare.

For both kinds of database (the server's, a workspace's) the migrations run to head on a fresh database of each
dialect, and what the database then holds is compared with the parts' ``sa.Table`` metadata: the same tables,
the same columns with the same nullability, the same indexes (name, columns, uniqueness, partial or not). The
database-side rules written as triggers (change counters, append-only logs) are checked to act on both.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import Connection

from hangar.codegraph.trigrams import FTS_TABLE, PG_INDEX
from hangar.core.migrating import RELEASE_TABLE, MigrationSet, apply_migrations, apply_postgresql_migrations
from hangar.core.postgresql import postgresql_url
from hangar.core.triggers import COUNTERS_TABLE
from hangar.server.parts import all_parts

SETS = {scope: [m for p in all_parts() for m in p.migrations if m.scope == scope] for scope in ("server", "workspace")}
# Tables the migrations create that no part declares as metadata: Alembic's version stamps, the counters
# (hangar.core.stamps writes them with SQL of its own), the Hangar version that migrated the database, and the code
# graph's trigram index, each dialect's own kind (SQLite's FTS5 table and its shadow tables; PostgreSQL's GIN index,
# in _UNDECLARED_INDEXES), which tests/integration/test_code_search_trigrams.py checks on both.
_UNDECLARED = re.compile(rf"alembic_version_\w+|{COUNTERS_TABLE}|{RELEASE_TABLE}|{FTS_TABLE}(_\w+)?")
_UNDECLARED_INDEXES = frozenset({PG_INDEX})


def _migrated(dialect: str, scope: str, tmp_path: Path, pg_url: str | None) -> sa.Engine:
    sets = SETS[scope]
    if dialect == "sqlite":
        path = tmp_path / f"{scope}.db"
        apply_migrations(path, sets)
        return sa.create_engine(f"sqlite:///{path}")
    assert pg_url is not None
    apply_postgresql_migrations(pg_url, sets)
    return sa.create_engine(postgresql_url(pg_url))


@pytest.fixture(params=["sqlite", "postgresql"])
def dialect(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db_url(dialect: str, request: pytest.FixtureRequest) -> str | None:
    """A fresh PostgreSQL database for the postgresql runs (the cluster starts only when one is asked for)."""
    return str(request.getfixturevalue("pg_url")) if dialect == "postgresql" else None


def _declared(sets: list[MigrationSet]) -> dict[str, sa.Table]:
    tables: dict[str, sa.Table] = {}
    for mset in sets:
        for metadata in mset.tables:
            for table in metadata.tables.values():
                assert table.name not in tables, f"{table.name} declared twice"
                tables[table.name] = table
    return tables


def _expression(text: str) -> str:
    """An index expression in one spelling (each dialect reflects its own quoting, parentheses and casts)."""
    return re.sub(r'[\s()"]|::\w+', "", text).lower()


def _declared_indexes(table: sa.Table) -> dict[str, tuple[Any, ...]]:
    found: dict[str, tuple[Any, ...]] = {}
    for index in table.indexes:
        keys = tuple(
            c.name if isinstance(c, sa.Column) else _expression(str(c.compile(compile_kwargs={"literal_binds": True})))
            for c in index.expressions
        )
        partial = any(index.dialect_options[d]["where"] is not None for d in ("sqlite", "postgresql"))
        found[str(index.name)] = (keys, bool(index.unique), partial)
    return found


def _reflected_indexes(conn: Connection, table: str) -> dict[str, tuple[Any, ...]]:
    found: dict[str, tuple[Any, ...]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.exc.SAWarning)  # SQLite's expression indexes: read below instead
        indexes = sa.inspect(conn).get_indexes(table)
    for index in indexes:
        if index["name"] in _UNDECLARED_INDEXES:
            continue
        if index.get("duplicates_constraint"):
            continue  # the index behind a UNIQUE constraint (PostgreSQL lists it twice)
        names = index["column_names"]
        expressions = index.get("expressions") or [None] * len(names)
        keys = tuple(n if n is not None else _expression(str(e)) for n, e in zip(names, expressions, strict=True))
        options = index.get("dialect_options", {})
        partial = options.get("sqlite_where") is not None or options.get("postgresql_where") is not None
        found[str(index["name"])] = (keys, bool(index["unique"]), partial)
    if conn.dialect.name == "sqlite":
        found.update(_sqlite_expression_indexes(conn, table, skip=set(found)))
    return found


def _sqlite_expression_indexes(conn: Connection, table: str, *, skip: set[str]) -> dict[str, tuple[Any, ...]]:
    """The indexes SQLAlchemy does not reflect on SQLite (on expressions), read from their CREATE statement."""
    found: dict[str, tuple[Any, ...]] = {}
    rows = conn.execute(
        sa.text("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = :t AND sql IS NOT NULL"),
        {"t": table},
    )
    for name, sql in rows:
        if name in skip:
            continue
        match = re.fullmatch(r"CREATE (UNIQUE )?INDEX \S+ ON \S+ \((.*?)\)( WHERE .*)?", sql, re.S)
        assert match, sql
        keys = tuple(_expression(part) for part in match.group(2).split(","))
        found[name] = (keys, match.group(1) is not None, match.group(3) is not None)
    return found


def _reflect(conn: Connection) -> dict[str, dict[str, Any]]:
    """The schema the database holds, in one form for both dialects: per table its columns (with nullability),
    primary key, indexes and unique constraints."""
    inspector = sa.inspect(conn)
    schema: dict[str, dict[str, Any]] = {}
    for name in inspector.get_table_names():
        if _UNDECLARED.fullmatch(name):
            continue
        schema[name] = {
            "columns": {c["name"]: bool(c["nullable"]) for c in inspector.get_columns(name)},
            "primary key": sorted(inspector.get_pk_constraint(name)["constrained_columns"]),
            "indexes": _reflected_indexes(conn, name),
            "unique": sorted(tuple(u["column_names"]) for u in _unique_constraints(inspector, name)),
        }
    return schema


def _unique_constraints(inspector: sa.Inspector, table: str) -> list[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.exc.SAWarning)  # SQLite reads its indexes here too (see above)
        return list(inspector.get_unique_constraints(table))


def _differences_from_declared(schema: dict[str, dict[str, Any]], sets: list[MigrationSet]) -> list[str]:
    """Where the database differs from the parts' table definitions: every declared table with exactly its
    columns, their nullability and its primary key, and every index the definitions declare. (Most indexes
    are declared by the migrations alone; ``test_both_dialects_build_one_schema`` compares those.)"""
    problems: list[str] = []
    for name, table in _declared(sets).items():
        have = schema.get(name)
        if have is None:
            problems.append(f"table {name} is missing")
            continue
        want = {c.name: bool(c.nullable) for c in table.columns}
        if have["columns"] != want:
            problems.append(f"{name}: columns (name: nullable) {have['columns']} != declared {want}")
        if have["primary key"] != sorted(c.name for c in table.primary_key.columns):
            problems.append(f"{name}: primary key {have['primary key']} in the database")
        for index, shape in _declared_indexes(table).items():
            if have["indexes"].get(index) != shape:
                problems.append(f"{name}: index {index} is {have['indexes'].get(index)}, declared {shape}")
    return problems


@pytest.mark.parametrize("scope", ["server", "workspace"])
def test_migrations_build_the_declared_schema(scope: str, dialect: str, db_url: str | None, tmp_path: Path) -> None:
    engine = _migrated(dialect, scope, tmp_path, db_url)
    try:
        with engine.connect() as conn:
            assert _differences_from_declared(_reflect(conn), SETS[scope]) == []
    finally:
        engine.dispose()


@pytest.mark.parametrize("scope", ["server", "workspace"])
def test_both_dialects_build_one_schema(scope: str, pg_url: str, tmp_path: Path) -> None:
    """Tables, columns, nullability, keys, indexes (with their uniqueness and partial conditions) and unique
    constraints are the same whichever dialect the migrations ran on, including what no metadata declares."""
    schemas = []
    for dialect in ("sqlite", "postgresql"):
        engine = _migrated(dialect, scope, tmp_path, pg_url)
        try:
            with engine.connect() as conn:
                schemas.append(_reflect(conn))
        finally:
            engine.dispose()
    sqlite, postgresql = schemas
    assert sorted(sqlite) == sorted(postgresql)
    for name in sorted(sqlite):
        assert (name, sqlite[name]) == (name, postgresql[name])


def test_migrating_again_changes_nothing(dialect: str, db_url: str | None, tmp_path: Path) -> None:
    """A second process opening a migrated database finds every set at head (the stamps were written)."""
    _migrated(dialect, "workspace", tmp_path, db_url).dispose()
    engine = _migrated(dialect, "workspace", tmp_path, db_url)
    try:
        with engine.connect() as conn:
            assert _differences_from_declared(_reflect(conn), SETS["workspace"]) == []
    finally:
        engine.dispose()


def test_triggers_act_on_both_dialects(dialect: str, db_url: str | None, tmp_path: Path) -> None:
    """The guardrails counter moves with each change of its table; the audit log refuses edits and deletions."""
    engine = _migrated(dialect, "workspace", tmp_path, db_url)
    counter = sa.text(f"SELECT value FROM {COUNTERS_TABLE} WHERE name = 'guardrails'")
    try:
        with engine.begin() as conn:
            before = conn.execute(counter).scalar_one()
            conn.execute(
                sa.text(
                    "INSERT INTO guardrail_settings (scope, read_only, ask_first, updated_at) "
                    "VALUES ('s', false, '[]', CURRENT_TIMESTAMP)"
                )
            )
            conn.execute(sa.text("UPDATE guardrail_settings SET read_only = true"))
            assert conn.execute(counter).scalar_one() == before + 2
            conn.execute(
                sa.text(
                    "INSERT INTO audit_log (at, principal, action, target, target_seq, details) "
                    "VALUES (CURRENT_TIMESTAMP, 'u', 'a', 't', 0, '{}')"
                )
            )
        for statement in ("UPDATE audit_log SET action = 'b'", "DELETE FROM audit_log"):
            with pytest.raises(sa.exc.DatabaseError, match="audit_log is append-only"), engine.begin() as conn:
                conn.execute(sa.text(statement))
    finally:
        engine.dispose()
