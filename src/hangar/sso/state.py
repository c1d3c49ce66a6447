"""Short-lived sign-in state in the server database, so a restart between login and callback loses nothing.

The SAML verifier is synchronous (the stores are called between its checks), so these stores use one plain
SQLite connection to the server database file (``hangar.core.sqlite_writer.connect``), one short
``BEGIN IMMEDIATE`` transaction per call, guarded by a lock. A call may wait for another writer of the server
database, so callers run it off the event loop (``asyncio.to_thread``): the other writer may be an
``aiosqlite`` transaction that needs the loop to finish, and blocking the loop would stall both. Using up a
row is a single ``DELETE ... RETURNING``: of two concurrent callbacks for the same request (in this process or
another one on the same data directory) exactly one gets the row. Times are written with ``sqlite_writer.dt``
(UTC text of a fixed shape), so comparing them in SQL compares the instants.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from hangar.core.sqlite_writer import connect, dt, transaction

T = TypeVar("T")

# A sign-in waits at most this long for another writer of the server database.
BUSY_MS = 5_000


def parse_dt(text: str) -> datetime:
    """A time written by ``sqlite_writer.dt`` back as an aware UTC datetime."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


class StateDb:
    """One lazily opened connection to the server database, one transaction per ``run``."""

    def __init__(self, path: Path | str) -> None:
        self._path = str(path)
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(connection, *args)`` inside one ``BEGIN IMMEDIATE`` transaction."""
        with self._lock:
            if self._conn is None:
                self._conn = connect(self._path, busy_ms=BUSY_MS)
            return transaction(fn)(self._conn, *args)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


# Table and column names below are this module's callers' fixed literals, never input.
def purge_expired(conn: sqlite3.Connection, table: str, column: str, now: datetime) -> None:
    conn.execute(f"DELETE FROM {table} WHERE {column} <= ?", (dt(now),))


def cap_oldest(conn: sqlite3.Connection, table: str, order: str, capacity: int) -> None:
    """Keep at most ``capacity`` rows in ``table``, dropping the oldest by ``order`` first."""
    (count,) = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    if count > capacity:
        conn.execute(
            f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} ORDER BY {order}, rowid LIMIT ?)",
            (count - capacity,),
        )
