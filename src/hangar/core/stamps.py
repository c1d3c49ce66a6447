"""Change counters: how a process knows that records it keeps in memory are still what the database holds.

Several processes share one data directory (the server, the CLI, later servers and workers on PostgreSQL), so no
process may act on a copy of authority (owner, roles, credentials, settings) or of records (agents, spaces,
guardrails) that another process may have changed since. Each database has a ``change_counters`` table with one
row per named counter; triggers on the guarded tables bump the counter in the same transaction as the change,
whichever process or code path makes it. A reader checks the counter before it trusts what it keeps
(``StampedCache``): reading one row costs a few microseconds, far less than reading the records themselves, and
a changed counter drops every copy that counter guards.

On SQLite the counter is read by a plain connection on the event loop (no thread hop): a WAL reader never waits
for writers. On PostgreSQL the same triggers exist (as a trigger function) and the counter is read by one async
connection in autocommit mode, on the event loop too (``hangar.core.pg_writer.PgReader``; ``Databases.stamp``
picks): one round trip, and it sees what any transaction of any process committed.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Generic, TypeVar

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core.sqlite_writer import connect
from hangar.core.triggers import COUNTERS_TABLE, bump_triggers_sql, drop_triggers_sql

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


Guard = tuple[str, str, tuple[str, ...] | None]  # (table, counter, the columns whose updates count; None: all)


def add_guards(execute: Callable[[str], object], guarded: list[Guard], *, dialect: str) -> None:
    """For a migration: the triggers that bump each counter when its table changes (``execute`` is ``op.execute``,
    ``dialect`` the migrated database's: ``op.get_bind().dialect.name``)."""
    for table, counter, columns in guarded:
        for statement in bump_triggers_sql(table, counter, update_columns=columns, dialect=dialect):
            execute(statement)


def drop_guards(execute: Callable[[str], object], guarded: list[Guard], *, dialect: str) -> None:
    for table, counter, _columns in guarded:
        for statement in drop_triggers_sql(table, counter, dialect=dialect):
            execute(statement)


# One counter's value (``?``: its name), for either dialect's plain reader.
STAMP_QUERY = f"SELECT value FROM {COUNTERS_TABLE} WHERE name = ?"


class StampReader:
    """Reads the change counters of one SQLite database file."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # readers may run on worker threads too (the CLI's sync code)

    def read(self, counter: str) -> int:
        row = self.fetch(STAMP_QUERY, (counter,))
        # A database that predates the counter (mid-migration) reads as "always changed".
        return -1 if row is None else int(row[0])

    def fetch(self, query: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        """The first row of a small read (an indexed lookup: it runs on the caller's thread)."""
        with self._lock:
            if self._conn is None:
                self._conn = connect(self._path, busy_ms=2000)
            row: tuple[Any, ...] | None = self._conn.execute(query, params).fetchone()
        return row

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


Stamp = Callable[[], Awaitable[int]]


def engine_stamp(engine: AsyncEngine, counter: str) -> Stamp:
    """``counter`` read through an async engine: one query per read. Any database dialect; the server uses
    ``Databases.stamp`` instead, which reads SQLite without a thread hop."""
    query = sa.text(f"SELECT value FROM {COUNTERS_TABLE} WHERE name = :name").bindparams(name=counter)

    async def read() -> int:
        async with engine.connect() as conn:
            value = (await conn.execute(query)).scalar()
        return -1 if value is None else int(value)

    return read


class StampedCache(Generic[K, V]):
    """Values loaded from a database, kept only while its change counter stays where it was at load time.

    ``stamp`` reads the counter now. A value is served from memory only when the counter read at this call
    equals the one the value was loaded under; otherwise every kept value is dropped and ``load`` runs again.
    A value loaded while the counter moved is kept under the older stamp, so the next call reloads it."""

    def __init__(self, stamp: Stamp, *, max_entries: int = 10_000) -> None:
        self._stamp = stamp
        self._max = max_entries
        self._version: int | None = None
        self._values: dict[K, V] = {}

    async def current(self) -> int:
        """Read the counter and drop what it no longer vouches for; returns the counter."""
        version = await self._stamp()
        if version != self._version or version < 0:
            self._values.clear()
            self._version = version
        return version

    async def get(self, key: K, load: Callable[[], Awaitable[V]], *, as_of: int | None = None) -> V:
        """The value for ``key``. ``as_of``: a counter value the caller read for this same decision (one read
        serves a request's checks); a value other than the one this cache holds is read again."""
        version = as_of if as_of is not None and as_of == self._version and as_of >= 0 else await self.current()
        if key in self._values:
            return self._values[key]
        value = await load()
        if self._version == version and version >= 0:
            if len(self._values) >= self._max:
                self._values.clear()  # a crude bound: the cache only saves reads
            self._values[key] = value
        return value

    def forget(self, key: K) -> None:
        self._values.pop(key, None)

    def clear(self) -> None:
        self._values.clear()
        self._version = None


class WorkspaceCaches(Generic[K, V]):
    """One ``StampedCache`` per workspace database, each checked against that database's ``counter``."""

    def __init__(self, stamp: Callable[[str, str], Awaitable[int]], counter: str) -> None:
        self._stamp = stamp
        self._counter = counter
        self._caches: dict[str, StampedCache[K, V]] = {}

    def of(self, workspace_id: str) -> StampedCache[K, V]:
        cache = self._caches.get(workspace_id)
        if cache is None:

            async def stamp() -> int:
                return await self._stamp(workspace_id, self._counter)

            cache = self._caches[workspace_id] = StampedCache(stamp)
        return cache

    async def get(self, workspace_id: str, key: K, load: Callable[[], Awaitable[V]]) -> V:
        return await self.of(workspace_id).get(key, load)
