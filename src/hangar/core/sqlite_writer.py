"""The SQLite side of the stores' write path (``hangar.core.write_conn``): plain connections, one transaction per
call.

Why: through the async engine a small transaction costs about a millisecond of thread hops (aiosqlite), far more
than the write itself. Writers on the hot paths (domain events, the audit log, pipeline ticks) use this instead.
The connection is a ``sqlite3.Connection`` (``SqliteConnection`` only adds ``WriteConnection``'s few methods, so
a statement costs what it always did). Datetimes are written the way SQLAlchemy's SQLite ``DateTime`` stores them
(UTC, no offset) and JSON compactly, so the SQLAlchemy readers read these rows back like any other.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import sqlite3
import threading
import urllib.parse
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from hangar.core.write_conn import transaction

T = TypeVar("T")


@functools.lru_cache(maxsize=512)
def dt(value: datetime | None) -> str | None:
    """A datetime as SQLAlchemy's SQLite ``DateTime`` stores it (UTC, no offset), so its readers parse it."""
    if value is None:
        return None
    if value.tzinfo is not None:
        if value.utcoffset():
            value = value.astimezone(UTC)
        value = value.replace(tzinfo=None)
    return value.isoformat(sep=" ", timespec="microseconds")


def js(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"), default=str)


class SqliteConnection(sqlite3.Connection):
    """A ``WriteConnection`` on SQLite: ``sqlite3.Connection`` itself, plus ``begin``, ``dt`` and ``js``."""

    dialect = "sqlite"
    dt = staticmethod(dt)
    js = staticmethod(js)

    def insert(self, sql: str, parameters: Sequence[Any], key: str, /) -> int:
        # ``key`` is an INTEGER PRIMARY KEY, which is the rowid; RETURNING would cost a few microseconds more.
        return int(self.execute(sql, parameters).lastrowid or 0)

    def begin(self) -> None:
        # IMMEDIATE: the write lock from the first statement, so what the transaction reads cannot change before
        # it writes (across processes too).
        self.execute("BEGIN IMMEDIATE")


def existing_uri(path: str | os.PathLike[str]) -> str:
    """The SQLite URI of the database file at ``path``, opened read-write but never created: a connection to a
    database that is not there (a workspace deleted meanwhile, an id that names no workspace) fails instead of
    leaving an empty file behind. Databases are made only by migrating them (``hangar.core.migrating``)."""
    return f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=rw"


def connect(path: str, *, busy_ms: int) -> SqliteConnection:
    """A connection to the existing database at ``path`` (``existing_uri``)."""
    conn = sqlite3.connect(
        existing_uri(path), uri=True, isolation_level=None, check_same_thread=False, factory=SqliteConnection
    )
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute(f"PRAGMA busy_timeout={busy_ms}")
    return conn


class SqliteWriter:
    """Plain SQLite connections to one database file, one transaction per ``call``.

    Fast path: the tick is written on the event loop by a connection that never waits for the lock
    (``busy_timeout=0``) and never checkpoints the WAL (``wal_autocheckpoint=0``), so it costs tens of
    microseconds and cannot stall the loop. When another writer holds the lock the same transaction is
    written from a dedicated thread by a connection that waits; that thread also checkpoints the WAL every
    ``CHECKPOINT_EVERY`` fast commits. Why: a thread hop per tick costs more than the write itself (see
    bench/bench_pipelines.py).
    """

    dt = staticmethod(dt)
    js = staticmethod(js)

    CHECKPOINT_EVERY = 500

    def __init__(self, path: str) -> None:
        self._path = path
        self._fast: SqliteConnection | None = None
        self._slow: SqliteConnection | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-writer")
        self._since_checkpoint = 0
        self._checkpointing: asyncio.Future[Any] | None = None

    def _slow_conn(self) -> SqliteConnection:
        if self._slow is None:
            self._slow = connect(self._path, busy_ms=10_000)
        return self._slow

    def _slow_call(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        return fn(self._slow_conn(), *args)

    def _checkpoint(self) -> None:
        self._slow_conn().execute("PRAGMA wal_checkpoint(PASSIVE)")

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(connection, *args)``, which runs one transaction: on the loop when the lock is free at once,
        else on the writer thread."""
        loop = asyncio.get_running_loop()
        if self._fast is None:
            self._fast = connect(self._path, busy_ms=0)
            self._fast.execute("PRAGMA wal_autocheckpoint=0")
        try:
            result = fn(self._fast, *args)
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            return await loop.run_in_executor(self._pool, self._slow_call, fn, args)
        self._since_checkpoint += 1
        if self._since_checkpoint >= self.CHECKPOINT_EVERY and (
            self._checkpointing is None or self._checkpointing.done()
        ):
            self._since_checkpoint = 0
            self._checkpointing = loop.run_in_executor(self._pool, self._checkpoint)
        return result

    def _close(self) -> None:
        if self._slow is not None:
            self._slow.close()
            self._slow = None

    async def aclose(self) -> None:
        if self._fast is not None:
            self._fast.close()
            self._fast = None
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._pool, self._close)
        self._pool.shutdown(wait=True)


class SqliteRunner:
    """Lazily opened connections to a database file for synchronous callers (``hangar.core.write_conn.Runner``):
    one for the write transactions (one per ``run``), one for ``read``. A write may wait ``busy_ms`` for another
    writer: callers run it off the event loop (the other writer may be an ``aiosqlite`` transaction that needs the
    loop to finish). Reads have a connection of their own so that they never queue behind a write waiting for
    the lock (in WAL mode a reader never waits for a writer)."""

    def __init__(self, path: Path | str, *, busy_ms: int) -> None:
        self._path = str(path)
        self._busy_ms = busy_ms
        self._conn: SqliteConnection | None = None
        self._reader: SqliteConnection | None = None
        self._lock = threading.Lock()
        self._read_lock = threading.Lock()

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        with self._lock:
            if self._conn is None:
                self._conn = connect(self._path, busy_ms=self._busy_ms)
            return transaction(fn)(self._conn, *args)

    def read(self, fn: Callable[..., T], *args: Any) -> T:
        with self._read_lock:
            if self._reader is None:
                self._reader = connect(self._path, busy_ms=self._busy_ms)
            return fn(self._reader, *args)

    def close(self) -> None:
        with self._lock, self._read_lock:
            for conn in (self._conn, self._reader):
                if conn is not None:
                    conn.close()
            self._conn = self._reader = None
