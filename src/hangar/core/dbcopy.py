"""Copying a SQLite install into PostgreSQL (``hangar admin migrate-to-postgresql``), verified table by table.

What is copied: the data directory's server database into the schema ``hangar_server`` and every workspace
database (``<dataDir>/<id>/workspace.db``) into its workspace's schema (``hangar.core.postgresql.workspace_schema``).
The files of the data directory stay where they are: they are not records.

The order of the work, and why:

1. The data directory's in-use lock is taken alone (``hangar.core.dblocation``): no server or command may write
   the source while it is read, and none starts until the copy is over.
2. Each source database is brought to the head of its migration sets, as any start of this version would; one a
   newer Hangar migrated, or a damaged one, is refused before anything is written.
3. The target must be empty: a Hangar schema whose tables hold a row (other than the migrations' version stamps
   and change counters) is refused, naming the schema and table, so nothing there is ever overwritten.
4. The target's schemas are migrated with the same migration sets (so both sides have the same tables).
5. In ONE PostgreSQL transaction: each table is copied with ``COPY ... FROM STDIN``, its rows read in key order
   in batches, parents before children (the foreign keys the target declares); then each serial column's
   sequence is set past the largest key the source ever handed out (SQLite's ``sqlite_sequence`` remembers keys
   of deleted rows too), and the change counters take the source's values. The database's own triggers are off
   for the copy: the counters are copied, not recounted.
6. Still in that transaction, every table (the version stamps included) is counted and fingerprinted on both
   sides (``hangar.core.dbdigest``); any difference rolls the whole copy back. Only then does it commit, and the
   data directory records the database (without password), so every later command opens it.

The source is read raw (the values SQLite holds) and PostgreSQL parses each as its column's type does, in a
transaction whose time zone is UTC, so SQLite's naive UTC timestamps keep their instant.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import sqlalchemy as sa
from psycopg import sql
from sqlalchemy.engine import URL
from sqlalchemy.pool import NullPool

from hangar.core.datadir import DataDir, workspace_ids
from hangar.core.dbdigest import JSON_TYPES, Fingerprint, fingerprint
from hangar.core.dbfailures import DatabaseDamaged, shown, unreachable
from hangar.core.dblocation import exclusively, record_url, recorded_url
from hangar.core.migrating import RELEASE_TABLE, MigrationSet, apply_migrations, apply_postgresql_migrations
from hangar.core.postgresql import SERVER_SCHEMA, pg_connect_args, postgresql_url, workspace_schema
from hangar.core.triggers import COUNTERS_TABLE
from hangar.errors import Internal, Refused

BATCH_ROWS = 1000  # rows read from SQLite at a time (each written at once into the table's COPY)
_STAMPS_PREFIX = "alembic_version_"
# Rows the target's migration wrote that the source's replace: the change counters and the Hangar version that
# last migrated the records (``hangar.core.migrating.RELEASE_TABLE``), which move with them.
_REPLACED = (COUNTERS_TABLE, RELEASE_TABLE)


class TargetNotEmpty(Refused):
    """The PostgreSQL database already holds Hangar records."""


class CopyMismatch(Internal):
    """A table's copy does not match its source (the copy was rolled back)."""


@dataclass(frozen=True)
class Source:
    """One SQLite database of the install and the schema it goes to."""

    label: str
    path: Path
    schema: str
    sets: tuple[MigrationSet, ...]


@dataclass(frozen=True)
class CopiedTable:
    schema: str
    table: str
    rows: int
    digest: str


@dataclass
class CopyReport:
    databases: int
    seconds: float = 0.0  # the whole transaction: copy and check
    checked_in_s: float = 0.0  # of which the check
    tables: list[CopiedTable] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(t.rows for t in self.tables if not t.table.startswith(_STAMPS_PREFIX))


def sources(root: Path, sets: Sequence[MigrationSet]) -> list[Source]:
    """The install's databases: the server's, then each workspace's in id order. The workspaces are those the
    server database records (``workspace_ids``), never a folder because it holds a ``workspace.db``: a staging
    folder of a creation that never finished, or a stray file, is no workspace to copy."""
    server = tuple(m for m in sets if m.scope == "server")
    workspace = tuple(m for m in sets if m.scope == "workspace")
    found = [Source("the server database", root / "server.db", SERVER_SCHEMA, server)]
    for ws in workspace_ids(DataDir(root)):
        found.append(Source(f"workspace {ws}", root / ws / "workspace.db", workspace_schema(ws), workspace))
    return found


def copy_install(
    root: Path,
    url: URL,
    sets: Sequence[MigrationSet],
    *,
    batch_rows: int = BATCH_ROWS,
    then: Callable[[psycopg.Connection[Any]], None] | None = None,
) -> CopyReport:
    """Copy the SQLite install at ``root`` into the empty PostgreSQL database at ``url`` (see the module).
    ``then``: what else goes into the copy's transaction once every table checked (the sealed secrets)."""
    with exclusively(root):
        already = recorded_url(root)
        if already is not None:
            raise Refused(f"the data directory {root} already keeps its records in PostgreSQL ({shown(already)})")
        if not (root / "server.db").is_file():
            raise Refused(f"{root} holds no Hangar install to copy (it has no server.db)")
        install = sources(root, sets)
        for source in install:
            try:
                apply_migrations(source.path, source.sets)
            except DatabaseDamaged as exc:
                raise DatabaseDamaged(f"{source.label} cannot be copied: {exc.message}") from exc
        engine = sa.create_engine(postgresql_url(url), poolclass=NullPool, connect_args=pg_connect_args(url))
        try:
            try:
                raw = engine.raw_connection()
            except sa.exc.DBAPIError as exc:
                raise unreachable(engine.url, exc) from exc
            try:
                conn = raw.driver_connection
                assert isinstance(conn, psycopg.Connection)
                conn.autocommit = True
                _refuse_non_empty(conn, engine.url)
                for source in install:
                    apply_postgresql_migrations(url, source.sets, schema=source.schema)
                conn.autocommit = False
                report = _copy(conn, install, batch_rows, then)
            finally:
                raw.close()
        finally:
            engine.dispose()
        record_url(root, url)
        return report


def _copy(
    conn: psycopg.Connection[Any],
    install: Sequence[Source],
    batch_rows: int,
    then: Callable[[psycopg.Connection[Any]], None] | None,
) -> CopyReport:
    report = CopyReport(databases=len(install))
    began = time.monotonic()
    with conn.transaction():
        conn.execute("SET LOCAL TimeZone TO 'UTC'")
        opened = [(source, _read_only(source.path)) for source in install]
        try:
            for source, db in opened:
                _copy_database(conn, source, db, batch_rows)
            copied = time.monotonic()
            for source, db in opened:
                report.tables.extend(_verify(conn, source, db))
            report.checked_in_s = time.monotonic() - copied
            if then is not None:
                then(conn)
        finally:
            for _source, db in opened:
                db.close()
    report.seconds = time.monotonic() - began
    return report


def _read_only(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    # One read transaction for the copy and its check: both see the same snapshot.
    db.execute("BEGIN")
    return db


def _refuse_non_empty(conn: psycopg.Connection[Any], url: URL) -> None:
    """``TargetNotEmpty`` naming the first Hangar table of the target that holds rows."""
    tables = conn.execute(
        "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
        "AND (table_schema = %s OR table_schema LIKE 'ws\\_%%' OR table_schema LIKE 'wh\\_%%') "
        "ORDER BY table_schema, table_name",
        (SERVER_SCHEMA,),
    ).fetchall()
    for schema, table in tables:
        if table.startswith(_STAMPS_PREFIX) or table in _REPLACED:
            continue
        name = sql.Identifier(schema, table)
        if conn.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {})").format(name)).fetchone() != (True,):
            continue
        row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(name)).fetchone()
        rows = row[0] if row else 0
        raise TargetNotEmpty(
            f"the PostgreSQL database {shown(url)} is not empty: {schema}.{table} holds {rows} row(s); "
            "migrate-to-postgresql copies only into an empty database (drop its Hangar schemas, or name another)"
        )


def _columns(conn: psycopg.Connection[Any], schema: str) -> dict[str, dict[str, str]]:
    """Each table of ``schema`` and its columns' types, as PostgreSQL names them."""
    found: dict[str, dict[str, str]] = {}
    for table, column, kind in conn.execute(
        "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = %s "
        "ORDER BY table_name, ordinal_position",
        (schema,),
    ):
        found.setdefault(table, {})[column] = kind
    return found


def _source_tables(db: sqlite3.Connection) -> list[str]:
    """The source's tables of records. Not a virtual table or its shadow tables (the code graph's FTS5 trigram
    index, ``hangar.codegraph.trigrams``): they are an index SQLite keeps, which PostgreSQL keeps its own way
    (the GIN index the target's migration made, filled by the copied rows)."""
    rows = db.execute("SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table' ORDER BY name")
    return [str(r[0]) for r in rows if not str(r[0]).startswith("sqlite")]


def _source_columns(db: sqlite3.Connection, table: str) -> tuple[list[str], list[str]]:
    """The table's columns, and its primary key's (in key order; empty: none)."""
    info = db.execute(f'PRAGMA table_info("{table}")').fetchall()
    columns = [str(r[1]) for r in info]
    key = [str(r[1]) for r in sorted((r for r in info if r[5]), key=lambda r: int(r[5]))]
    return columns, key


def _parents_first(conn: psycopg.Connection[Any], schema: str, tables: list[str]) -> list[str]:
    """``tables`` ordered so a table comes after those its foreign keys name (a table naming itself is copied
    in one statement, whose keys PostgreSQL checks at its end)."""
    needs: dict[str, set[str]] = {t: set() for t in tables}
    for child, parent in conn.execute(
        "SELECT c.relname, p.relname FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid "
        "JOIN pg_class p ON p.oid = k.confrelid JOIN pg_namespace n ON n.oid = k.connamespace "
        "WHERE k.contype = 'f' AND n.nspname = %s",
        (schema,),
    ):
        if child in needs and parent in needs and child != parent:
            needs[child].add(parent)
    ordered: list[str] = []
    while needs:
        ready = sorted(t for t, parents in needs.items() if not parents - set(ordered))
        if not ready:
            raise DatabaseDamaged(f"schema {schema}: the foreign keys of {', '.join(sorted(needs))} form a cycle")
        ordered.extend(ready)
        for t in ready:
            del needs[t]
    return ordered


def _copy_database(conn: psycopg.Connection[Any], source: Source, db: sqlite3.Connection, batch_rows: int) -> None:
    schema = sql.Identifier(source.schema)
    conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(schema))
    target = _columns(conn, source.schema)
    tables = [t for t in _source_tables(db) if not t.startswith(_STAMPS_PREFIX)]
    for table in tables:
        columns, _key = _source_columns(db, table)
        missing = [c for c in columns if c not in target.get(table, {})]
        if missing:
            raise DatabaseDamaged(
                f"{source.label}: {table} ({', '.join(missing)}) has no counterpart in schema {source.schema}"
            )
    for replaced in _REPLACED:
        conn.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(replaced)))
    for table in _parents_first(conn, source.schema, tables):
        _copy_table(conn, db, table, batch_rows)
    _advance_sequences(conn, source.schema, db)


def _copy_table(conn: psycopg.Connection[Any], db: sqlite3.Connection, table: str, batch_rows: int) -> None:
    columns, key = _source_columns(db, table)
    name = sql.Identifier(table)
    listed = sql.SQL(", ").join(sql.Identifier(c) for c in columns)
    quoted = ", ".join(f'"{c}"' for c in columns)
    order = ", ".join(f'"{c}"' for c in key) or "rowid"
    conn.execute(sql.SQL("ALTER TABLE {} DISABLE TRIGGER USER").format(name))
    with conn.cursor() as cursor, cursor.copy(sql.SQL("COPY {} ({}) FROM STDIN").format(name, listed)) as copy:
        rows = db.execute(f'SELECT {quoted} FROM "{table}" ORDER BY {order}')
        while batch := rows.fetchmany(batch_rows):
            for row in batch:
                copy.write_row(row)
    conn.execute(sql.SQL("ALTER TABLE {} ENABLE TRIGGER USER").format(name))


def _advance_sequences(conn: psycopg.Connection[Any], schema: str, db: sqlite3.Connection) -> None:
    """Each serial column's sequence past the largest key the source used (``sqlite_sequence`` keeps the keys
    of deleted rows too, which SQLite never hands out again)."""
    used: dict[str, int] = {}
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").fetchone():
        used = {str(n): int(s) for n, s in db.execute("SELECT name, seq FROM sqlite_sequence")}
    serials = conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = %s "
        "AND column_default LIKE 'nextval(%%'",
        (schema,),
    ).fetchall()
    for table, column in serials:
        row = conn.execute(sql.SQL("SELECT max({}) FROM {}").format(sql.Identifier(column), sql.Identifier(table)))
        top = max(int((row.fetchone() or (0,))[0] or 0), used.get(table, 0))
        if top > 0:
            conn.execute(
                "SELECT setval(pg_get_serial_sequence(%s, %s), %s)",
                (sql.Identifier(schema, table).as_string(conn), column, top),
            )


def _verify(conn: psycopg.Connection[Any], source: Source, db: sqlite3.Connection) -> Iterator[CopiedTable]:
    """Each table's count and fingerprint on both sides; ``CopyMismatch`` at the first that differs."""
    target = _columns(conn, source.schema)
    for table in _source_tables(db):
        columns, _key = _source_columns(db, table)
        kinds = [target[table][c] for c in columns]
        quoted = ", ".join(f'"{c}"' for c in columns)
        mine = fingerprint(db.execute(f'SELECT {quoted} FROM "{table}"'), kinds)
        # JSON as its text: PostgreSQL would parse ``null`` to None, the same as SQL NULL.
        listed = sql.SQL(", ").join(
            sql.SQL("{}::text").format(sql.Identifier(c)) if k in JSON_TYPES else sql.Identifier(c)
            for c, k in zip(columns, kinds, strict=True)
        )
        with conn.cursor(name=f"verify_{table}") as cursor:
            cursor.execute(sql.SQL("SELECT {} FROM {}").format(listed, sql.Identifier(source.schema, table)))
            theirs = fingerprint(_batches(cursor), kinds)
        if mine != theirs:
            raise CopyMismatch(_mismatch(source, table, mine, theirs))
        yield CopiedTable(source.schema, table, mine.rows, mine.digest)


def _batches(cursor: psycopg.Cursor[Any]) -> Iterator[Any]:
    while batch := cursor.fetchmany(BATCH_ROWS):
        yield from batch


def _mismatch(source: Source, table: str, mine: Fingerprint, theirs: Fingerprint) -> str:
    return (
        f"the copy of {source.label}'s {table} does not match it ({mine.rows} rows, checksum {mine.short()} in "
        f"SQLite; {theirs.rows} rows, checksum {theirs.short()} in PostgreSQL schema {source.schema}): nothing "
        "was kept"
    )
