"""The runner's write path: plain SQLite connections and precompiled statements, one transaction per tick.

Datetimes are written the way SQLAlchemy's SQLite ``DateTime`` stores them (UTC, no offset) and JSON compactly,
so the store's SQLAlchemy readers read these rows back like any other.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, TypeVar

from hangar.pipelines._algo import StepRec
from hangar.pipelines.rows import RunRow

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


_SQL_STEP = (
    "UPDATE pipeline_step_runs SET status=?, attempts=?, error=?, route_key=?, started_at=?, finished_at=?, "
    "not_before=?, suspend=?, deadline=?, resume=?, progress=? WHERE run_id=? AND step_id=?"
)
_SQL_RUN = "UPDATE pipeline_runs SET status=?, state=?, error=?, updated_at=?, finished_at=? WHERE id=?"
_SQL_CLEAR = "DELETE FROM pipeline_waits WHERE run_id=? AND step_id=?"
_SQL_WAIT = "INSERT OR IGNORE INTO pipeline_waits (run_id, step_id, wait_key) VALUES (?, ?, ?)"
_SQL_SEQ = "SELECT max(seq) FROM domain_events"


def step_row(run_id: str, r: StepRec) -> tuple[Any, ...]:
    return (
        r.status.value,
        r.attempts,
        r.error,
        r.route_key,
        dt(r.started_at),
        dt(r.finished_at),
        dt(r.not_before),
        js(r.suspend),
        dt(r.deadline),
        js(r.resume),
        js(r.progress),
        run_id,
        r.step_id,
    )


def run_row_values(r: RunRow) -> tuple[Any, ...]:
    return (r.status.value, js(r.state), r.error, dt(r.updated_at), dt(r.finished_at), r.id)


def _connect(path: str, *, busy_ms: int) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute(f"PRAGMA busy_timeout={busy_ms}")
    return conn


def _transaction(fn: Callable[..., T]) -> Callable[..., T]:
    """Run ``fn(conn, ...)`` inside ``BEGIN IMMEDIATE`` ... ``COMMIT`` (rolled back when it raises)."""

    def wrapped(conn: sqlite3.Connection, *args: Any) -> T:
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(conn, *args)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return result

    return wrapped


@_transaction
def write_tick(
    conn: sqlite3.Connection,
    run_id: str,
    steps: list[tuple[Any, ...]],
    run: tuple[Any, ...] | None,
    cleared: list[str],
    added: list[tuple[str, str]],
) -> int:
    if steps:
        conn.executemany(_SQL_STEP, steps)
    if run is not None:
        conn.execute(_SQL_RUN, run)
    if cleared:
        conn.executemany(_SQL_CLEAR, [(run_id, s) for s in cleared])
    if added:
        conn.executemany(_SQL_WAIT, [(run_id, s, k) for s, k in added])
    return int(conn.execute(_SQL_SEQ).fetchone()[0] or 0)


_SQL_INSERT_RUN = (
    "INSERT INTO pipeline_runs (id, template_id, template, status, trigger_id, trigger_kind, trigger_key, payload, "
    "state, dry_run, parent_run_id, parent_step_id, error, created_by, created_at, updated_at, finished_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SQL_INSERT_STEP = "INSERT INTO pipeline_step_runs (run_id, step_id, position, status, attempts) VALUES (?, ?, ?, ?, 0)"


def interest(conn: sqlite3.Connection, keys: list[str], event_type: str) -> tuple[list[tuple[str, str]], bool]:
    marks = ",".join("?" * len(keys))
    waiters = conn.execute(
        f"SELECT DISTINCT run_id, step_id FROM pipeline_waits WHERE wait_key IN ({marks})", keys
    ).fetchall()
    trig = conn.execute(
        "SELECT 1 FROM pipeline_triggers WHERE kind = 'event' AND event_type = ? LIMIT 1", (event_type,)
    ).fetchone()
    return [(str(r[0]), str(r[1])) for r in waiters], trig is not None


@_transaction
def insert_run(conn: sqlite3.Connection, run: tuple[Any, ...], steps: list[tuple[Any, ...]]) -> None:
    conn.execute(_SQL_INSERT_RUN, run)
    conn.executemany(_SQL_INSERT_STEP, steps)


class Writer:
    """The runner's write path: plain SQLite connections and precompiled statements, one transaction a tick.

    Fast path: the tick is written on the event loop by a connection that never waits for the lock
    (``busy_timeout=0``) and never checkpoints the WAL (``wal_autocheckpoint=0``), so it costs tens of
    microseconds and cannot stall the loop. When another writer holds the lock the same transaction is
    written from a dedicated thread by a connection that waits; that thread also checkpoints the WAL every
    ``CHECKPOINT_EVERY`` fast commits. Why: a thread hop per tick costs more than the write itself (see
    bench/bench_pipelines.py).
    """

    CHECKPOINT_EVERY = 500

    def __init__(self, path: str) -> None:
        self._path = path
        self._fast: sqlite3.Connection | None = None
        self._slow: sqlite3.Connection | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pipelines-db")
        self._since_checkpoint = 0
        self._checkpointing: asyncio.Future[Any] | None = None

    def _slow_conn(self) -> sqlite3.Connection:
        if self._slow is None:
            self._slow = _connect(self._path, busy_ms=10_000)
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
            self._fast = _connect(self._path, busy_ms=0)
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
