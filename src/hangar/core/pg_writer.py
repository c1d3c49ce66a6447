"""The PostgreSQL side of the stores' write path (``hangar.core.write_conn``): pooled psycopg connections on a
thread, one transaction per call; and ``PgReader``, the change counters' reads on the event loop.

Every database of a server lives in one PostgreSQL database, a schema each (``hangar.core.db``). A transaction
names its schema first (``set_config('search_path', ..., true)``, which is ``SET LOCAL``: it ends with the
transaction, so a pooled connection never carries one workspace's schema into another's transaction). A write
transaction (``begin``) also takes the advisory write lock ``hangar.core.db.write_transaction`` takes, in the same
round trip: writes through this path and through SQLAlchemy run one at a time, as SQLite's one write lock makes
them. A call that only reads takes no lock.

Statements are written with ``?`` placeholders for both dialects; ``_pg_sql`` rewrites them into psycopg's
``%s`` (and doubles a ``%``), once per statement text.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor
from datetime import UTC, datetime
from typing import Any, TypeVar

import psycopg
from psycopg.pq import TransactionStatus
from sqlalchemy import Engine

from hangar.core.write_conn import transaction

T = TypeVar("T")


@functools.lru_cache(maxsize=1024)
def _pg_sql(sql: str) -> str:
    """A statement written for both dialects, in psycopg's placeholder style."""
    return sql.replace("%", "%%").replace("?", "%s")


@functools.lru_cache(maxsize=256)
def _pg_returning(sql: str, key: str) -> str:
    return f"{_pg_sql(sql)} RETURNING {key}"


def pg_dt(value: datetime | None) -> datetime | None:
    """A timestamp for a ``timestamptz`` column: aware (a naive value is UTC, as SQLite's text form has it)."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def pg_js(value: Any) -> str | None:
    # Text: psycopg sends a ``str`` untyped, and the server reads it as the column's ``json``.
    return None if value is None else json.dumps(value, separators=(",", ":"), default=str)


class PgConnection:
    """A ``WriteConnection`` on one psycopg connection, in ``schema``.

    ``nested``: the connection is inside a transaction someone else owns (a new workspace's migration, which
    seeds its first rows): ``begin``, ``commit`` and ``rollback`` leave that transaction alone."""

    dialect = "postgresql"
    dt = staticmethod(pg_dt)
    js = staticmethod(pg_js)

    def __init__(self, raw: psycopg.Connection[Any], schema: str, write_lock: int, *, nested: bool = False) -> None:
        self._raw = raw
        self._schema = schema
        self._write_lock = write_lock
        self._nested = nested

    def _enter(self, *, lock: bool) -> None:
        if lock:
            self._raw.execute(
                "SELECT set_config('search_path', %s, true), pg_advisory_xact_lock(%s)",
                (self._quoted(), self._write_lock),
            )
        else:
            self._raw.execute("SELECT set_config('search_path', %s, true)", (self._quoted(),))

    def _quoted(self) -> str:
        return '"' + self._schema.replace('"', '""') + '"'

    @property
    def in_transaction(self) -> bool:
        return self._raw.info.transaction_status != TransactionStatus.IDLE

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> psycopg.Cursor[Any]:
        if not self._nested and not self.in_transaction:
            self._enter(lock=False)  # a read outside ``begin``: its own transaction, in the schema
        return self._raw.execute(_pg_sql(sql), parameters)

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> psycopg.Cursor[Any]:
        if not self._nested and not self.in_transaction:
            self._enter(lock=False)
        cursor = self._raw.cursor()
        cursor.executemany(_pg_sql(sql), parameters)
        return cursor

    def insert(self, sql: str, parameters: Sequence[Any], key: str, /) -> int:
        if not self._nested and not self.in_transaction:
            self._enter(lock=False)
        return int(self._raw.execute(_pg_returning(sql, key), parameters).fetchone()[0])  # type: ignore[index]

    def begin(self) -> None:
        if not self._nested:
            self._enter(lock=True)

    def commit(self) -> None:
        if not self._nested:
            self._raw.commit()

    def rollback(self) -> None:
        if not self._nested:
            self._raw.rollback()


class PgWriter:
    """The write path of one schema of a PostgreSQL database (``Writer`` and ``Runner`` both): connections from
    ``engine``'s pool, async calls on ``threads`` (both shared by the ``Databases``' writers and closed with it).
    Threads of their own: writes queued behind the write lock never hold the threads ``asyncio.to_thread`` lends
    everything else."""

    dt = staticmethod(pg_dt)
    js = staticmethod(pg_js)

    def __init__(self, engine: Engine, threads: Executor, schema: str, write_lock: int) -> None:
        self._engine = engine
        self._threads = threads
        self._schema = schema
        self._write_lock = write_lock

    def _on_connection(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        pooled = self._engine.raw_connection()
        try:
            raw = pooled.driver_connection
            assert isinstance(raw, psycopg.Connection)
            conn = PgConnection(raw, self._schema, self._write_lock)
            try:
                result = fn(conn, *args)
                if conn.in_transaction:  # a call that only read left its transaction open
                    raw.commit()
            except BaseException:
                raw.rollback()
                raise
            return result
        finally:
            pooled.close()  # back to the pool

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(conn, *args)`` on a pooled connection, on a worker thread (psycopg's calls block)."""
        return await asyncio.get_running_loop().run_in_executor(self._threads, self._on_connection, fn, args)

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(conn, *args)`` in one write transaction, on the caller's thread."""
        return self._on_connection(transaction(fn), args)

    def read(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(conn, *args)`` that only reads, on the caller's thread: no advisory lock is taken."""
        return self._on_connection(fn, args)

    async def aclose(self) -> None:
        """Nothing of its own to close: the pool is the ``Databases``'."""

    def close(self) -> None:
        """Nothing of its own to close: the pool is the ``Databases``'."""


# How the reader's connection shows in ``pg_stat_activity``.
READER_APPLICATION = "hangar-counters"


class PgReader:
    """Small reads (a change counter, the newest event's number) of one PostgreSQL database, on the event loop:
    one async psycopg connection of its own in autocommit mode, so a read costs one round trip (no pool checkout,
    no transaction, no thread). Its session's ``search_path`` is set when a read names another schema than the
    last one. A connection the server dropped (a restart) is opened again and the read retried once: a read
    changes nothing."""

    def __init__(self, conninfo: str) -> None:
        self._conninfo = conninfo
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._schema: str | None = None
        self._lock: asyncio.Lock | None = None

    async def fetchone(self, schema: str, sql: str, parameters: Sequence[Any] = ()) -> Any:
        """The first row of ``sql`` (written for both dialects) in ``schema``, or None."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            for attempt in (1, 2):
                try:
                    return await self._fetchone(schema, sql, parameters)
                except psycopg.OperationalError:
                    await self.aclose()
                    if attempt == 2:
                        raise
        raise AssertionError("unreachable")

    async def _fetchone(self, schema: str, sql: str, parameters: Sequence[Any]) -> Any:
        if self._conn is None:
            self._conn = await psycopg.AsyncConnection.connect(
                self._conninfo, autocommit=True, application_name=READER_APPLICATION
            )
            self._schema = None
        if schema != self._schema:
            quoted = '"' + schema.replace('"', '""') + '"'
            await self._conn.execute("SELECT set_config('search_path', %s, false)", (quoted,))
            self._schema = schema
        cursor = await self._conn.execute(_pg_sql(sql), parameters)
        return await cursor.fetchone()

    async def aclose(self) -> None:
        conn, self._conn, self._schema = self._conn, None, None
        if conn is not None:
            await conn.close()
