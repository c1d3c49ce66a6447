"""The stores' small write transactions, written once for SQLite and PostgreSQL.

Domain events, the audit log, pipeline ticks, a rig's action log and sign-in state write through a plain driver
connection instead of SQLAlchemy: a tick costs less than the thread hops of the async engine (see
``hangar.core.sqlite_writer``). A store writes a function ``fn(conn, ...)`` against ``WriteConnection`` and
hands it to the writer of its database (``Databases.writer``, ``Databases.server_runner``), which is one of two:

- SQLite (``hangar.core.sqlite_writer``): the connection is a ``sqlite3.Connection``; the write runs on the
  event loop when the lock is free at once, else on a thread.
- PostgreSQL (``hangar.core.pg_writer``): a pooled psycopg connection on a thread; each transaction runs in its
  database's schema and takes the same advisory write lock as ``hangar.core.db.write_transaction``.

The SQL is the subset both accept: ``?`` placeholders (the PostgreSQL connection rewrites them into ``%s``, so
a statement never holds a literal ``?``), ``INSERT ... ON CONFLICT ... DO NOTHING / DO UPDATE`` rather than
``INSERT OR IGNORE / OR REPLACE``, ``conn.insert`` for a new row's number (SQLite's ``lastrowid``, PostgreSQL's
``RETURNING``), and keys rather than ``rowid``. Values whose stored form differs go through the connection:
``conn.dt`` (SQLite: the UTC text SQLAlchemy's ``DateTime`` writes, so its readers read these rows; PostgreSQL:
an aware datetime for ``timestamptz``) and ``conn.js`` (JSON text on both). A datetime read back comes as text
from SQLite and as a datetime from PostgreSQL: ``read_dt`` takes either.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


def integrity_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a unique or foreign-key violation raised by either dialect's driver (a store tells
    "already there" by it). psycopg is looked up, never imported: a process on SQLite does not load it (tens of
    milliseconds at start), and without it no psycopg error can have been raised."""
    if isinstance(exc, sqlite3.IntegrityError):
        return True
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(exc, psycopg.IntegrityError)


class Rows(Protocol):
    """The result of one statement (a DB-API cursor)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Values(Protocol):
    """How one dialect stores the values whose form differs (a connection and its writer both say)."""

    def dt(self, value: datetime | None, /) -> Any:
        """``value`` as this database stores a timestamp (naive values are UTC)."""

    def js(self, value: Any, /) -> Any:
        """``value`` as this database stores JSON."""


class WriteConnection(Values, Protocol):
    """One connection to one database (for PostgreSQL, one schema), as ``fn(conn, ...)`` sees it."""

    dialect: str  # ``sqlite`` or ``postgresql``

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Rows: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any: ...

    def insert(self, sql: str, parameters: Sequence[Any], key: str, /) -> int:
        """Run the ``INSERT`` of one row; the integer primary key ``key`` the database gave it (SQLite: the
        statement's ``lastrowid``, which costs nothing; PostgreSQL: the statement with ``RETURNING key``)."""

    def begin(self) -> None:
        """Start a write transaction holding the database's write lock (``BEGIN IMMEDIATE``, or the advisory
        lock)."""

    def commit(self) -> None: ...

    def rollback(self) -> None: ...


def transaction(fn: Callable[..., T]) -> Callable[..., T]:
    """Run ``fn(conn, ...)`` in one write transaction (``conn.begin()`` ... ``commit``; rolled back when it
    raises)."""

    def wrapped(conn: WriteConnection, *args: Any) -> T:
        conn.begin()
        try:
            result = fn(conn, *args)
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        return result

    return wrapped


class Writer(Values, Protocol):
    """The write path of one database for async callers: ``call`` runs ``fn(conn, *args)``; ``fn`` makes its own
    transaction (``transaction``), or only reads. Its ``dt`` and ``js`` are its connections' (for arguments
    prepared before the call)."""

    async def call(self, fn: Callable[..., T], *args: Any) -> T: ...

    async def aclose(self) -> None: ...


class Runner(Protocol):
    """The write path of one database for synchronous callers (the SAML verifier calls its stores between its
    checks): ``run`` runs ``fn(conn, *args)`` in one write transaction, on the caller's thread, which may wait
    for the lock (callers off the event loop)."""

    def run(self, fn: Callable[..., T], *args: Any) -> T: ...

    def read(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(conn, *args)`` that only reads, outside any write transaction: it takes no write lock, so it never
        waits for a writer (a check that a later write transaction makes again, or a read of committed rows)."""

    def close(self) -> None: ...


def read_dt(value: str | datetime) -> datetime:
    """A timestamp read through a ``WriteConnection`` (SQLite's UTC text, PostgreSQL's datetime) as an aware UTC
    datetime."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
