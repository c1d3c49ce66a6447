"""Driver leases across hosts on PostgreSQL: who drives a run, held by a session-level advisory lock.

Why advisory locks rather than lease rows with heartbeats and expiry: a session-level advisory lock
(``pg_try_advisory_lock``) belongs to one database connection and the database releases it the moment that
connection ends, however it ends (the process killed -9, its host gone once the server's TCP keepalive gives
up), exactly as the kernel releases a ``flock`` when a process dies. So a run a dead driver held is free at once,
with no expiry to wait out, no clock shared between hosts to trust, and no row to clean up; a lease row would
add a heartbeat write per run per interval and a take-over delay of its expiry. What the lock cannot do alone is
tell its holder it is gone: a process whose lease connection broke (the database restarted, the network cut)
still believes it drives. So every ``Leases`` proves its connection alive every ``heartbeat`` seconds and, the
first time a check or a call fails, *fences*: it forgets every lease and calls ``on_lost``, whose owners stop
driving those runs at once, recording nothing; a later pass claims them again when the connection is back and
nobody else took them meanwhile. Between the database releasing the lock and the holder noticing, up to
``heartbeat`` plus ``CHECK_TIMEOUT_S`` pass: a second driver may start within that window (the steps it re-runs
are the ones a dead driver would have left, as on one host).

The connection is dedicated (psycopg 3, autocommit, outside the engines' pool, which would recycle it and its
locks with it), one per process, shown as ``hangar leases`` in ``pg_stat_activity``. It asks the database server to
probe it with TCP keepalives (``tcp_keepalives_*``: about 15 s), so a holder's host that vanishes without closing
its socket loses its leases within that time rather than the system's two hours.

Keys: a lease names ``(kind, id)``, hashed with ``hashtextextended`` into the 64-bit advisory key space; a
collision between two live runs would make one wait for the other, never let two drive one.

A session may take its own advisory lock again (PostgreSQL counts); ``Leases`` refuses that itself so a run is
claimed once per process too, as ``flock`` on a second descriptor refuses.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import psycopg
from sqlalchemy.engine import URL

from hangar.core.dbfailures import first_line_without, secrets_of, shown

log = logging.getLogger(__name__)

APPLICATION_NAME = "hangar leases"
HEARTBEAT_S = 1.0
CHECK_TIMEOUT_S = 5.0
_CONNECT_TIMEOUT_S = 10
_KEY = "hashtextextended(%s, 0)"
# The database server's probes of this connection: first after 5 s idle, then every 2 s, given up after 5.
_KEEPALIVES = ("SET tcp_keepalives_idle = 5", "SET tcp_keepalives_interval = 2", "SET tcp_keepalives_count = 5")

OnLost = Callable[[list[tuple[str, str]]], None]


def lease_name(kind: str, ident: str) -> str:
    return f"hangar:{kind}:{ident}"


class LeaseLost(Exception):
    """The lease connection failed: every lease this process held is gone."""


class Leases:
    """One process's leases on one PostgreSQL database. ``on_lost(keys)`` is called (on the event loop) with the
    leases held when the connection is found broken; they are no longer held."""

    def __init__(self, url: URL, *, heartbeat: float = HEARTBEAT_S) -> None:
        self._conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self._target = shown(url)
        self._secrets = secrets_of(url)
        self.heartbeat = heartbeat
        self._conn: psycopg.AsyncConnection[tuple[object, ...]] | None = None
        self._lock = asyncio.Lock()
        self._held: set[tuple[str, str]] = set()
        self._watchers: list[OnLost] = []
        self._beat: asyncio.Task[None] | None = None
        self.fenced = 0  # how many times the connection was lost while holding leases (tests and logs)

    def on_lost(self, callback: OnLost) -> None:
        self._watchers.append(callback)

    @property
    def backend_pid(self) -> int | None:
        return None if self._conn is None or self._conn.closed else self._conn.info.backend_pid

    def holds(self, kind: str, ident: str) -> bool:
        return (kind, ident) in self._held

    async def _connection(self) -> psycopg.AsyncConnection[tuple[object, ...]]:
        if self._conn is None or self._conn.closed:
            conn = await psycopg.AsyncConnection.connect(
                self._conninfo, autocommit=True, connect_timeout=_CONNECT_TIMEOUT_S, application_name=APPLICATION_NAME
            )
            for statement in _KEEPALIVES:
                await conn.execute(statement)
            self._conn = conn
        if self._beat is None or self._beat.done():
            self._beat = asyncio.get_running_loop().create_task(self._heartbeat(), name="leases:heartbeat")
        return self._conn

    async def _call(self, sql: str, name: str) -> bool:
        """One lock call on the lease connection. A connection found broken fences (every lease held is gone)
        and the call is tried once more on a new one (after a database restart the next claim just works);
        ``LeaseLost`` when that fails too."""
        async with self._lock:
            for attempt in (1, 2):
                fresh = self._conn is None or self._conn.closed
                try:
                    conn = await self._connection()
                    cur = await asyncio.wait_for(conn.execute(sql, (name,)), CHECK_TIMEOUT_S)
                    row = await cur.fetchone()
                except (psycopg.Error, OSError, TimeoutError) as exc:
                    self._fence(exc)
                    if fresh or attempt == 2:
                        raise LeaseLost(f"the lease connection to {self._target} failed") from exc
                    continue
                return bool(row and row[0])
        raise AssertionError("unreachable")

    async def try_claim(self, kind: str, ident: str) -> bool:
        """Take the lease, or ``False`` when any process (this one included) holds it."""
        key = (kind, ident)
        if key in self._held:
            return False
        if not await self._call(f"SELECT pg_try_advisory_lock({_KEY})", lease_name(kind, ident)):
            return False
        self._held.add(key)
        return True

    async def release(self, kind: str, ident: str) -> None:
        """Give the lease up (nothing when not held; a broken connection released it already)."""
        key = (kind, ident)
        if key not in self._held:
            return
        self._held.discard(key)
        with contextlib.suppress(LeaseLost):
            await self._call(f"SELECT pg_advisory_unlock({_KEY})", lease_name(kind, ident))

    async def is_claimed(self, kind: str, ident: str) -> bool:
        """Whether some process (this one included) holds the lease right now."""
        if (kind, ident) in self._held:
            return True
        if await self._call(f"SELECT pg_try_advisory_lock({_KEY})", lease_name(kind, ident)):
            await self._call(f"SELECT pg_advisory_unlock({_KEY})", lease_name(kind, ident))
            return False
        return True

    async def _heartbeat(self) -> None:
        """Prove the connection alive while leases are held; fence at the first failure."""
        while True:
            await asyncio.sleep(self.heartbeat)
            if not self._held:
                continue
            async with self._lock:
                conn = self._conn
                try:
                    if conn is None or conn.closed:
                        raise psycopg.OperationalError("the lease connection is closed")
                    await asyncio.wait_for(conn.execute("SELECT 1"), CHECK_TIMEOUT_S)
                except (psycopg.Error, OSError, TimeoutError) as exc:
                    self._fence(exc)

    def _fence(self, exc: BaseException) -> None:
        lost = sorted(self._held)
        self._held.clear()
        conn, self._conn = self._conn, None
        if conn is not None and not conn.closed:
            task = asyncio.get_running_loop().create_task(conn.close())
            task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)
        if not lost:
            return
        self.fenced += 1
        log.warning(
            "lost the lease connection to %s (%s): stopped driving %d run(s) here; they are taken again when "
            "the database is back and no other process took them",
            self._target,
            self._reason(exc),
            len(lost),
        )
        for watcher in self._watchers:
            try:
                watcher(lost)
            except Exception:
                log.exception("a lease owner failed to stop after its leases were lost")

    def _reason(self, exc: BaseException) -> str:
        return first_line_without(exc, self._secrets, limit=200)

    async def aclose(self) -> None:
        if self._beat is not None:
            self._beat.cancel()
            await asyncio.gather(self._beat, return_exceptions=True)
            self._beat = None
        self._held.clear()
        if self._conn is not None:
            await self._conn.close()
            self._conn = None


__all__ = ["CHECK_TIMEOUT_S", "HEARTBEAT_S", "LeaseLost", "Leases", "lease_name"]
