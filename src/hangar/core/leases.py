"""Driver leases across hosts on PostgreSQL: who drives a run, held by a session-level advisory lock.

Why advisory locks rather than lease rows with heartbeats and expiry: a session-level advisory lock
(``pg_try_advisory_lock``) belongs to one database connection and the database releases it the moment that
connection ends, however it ends (the process killed -9, its host gone once the server's TCP keepalive gives
up), exactly as the kernel releases a ``flock`` when a process dies. So a run a dead driver held is free at once,
with no expiry to wait out, no clock shared between hosts to trust, and no row to clean up; a lease row would
add a heartbeat write per run per interval and a take-over delay of its expiry. What the lock cannot do alone is
tell its holder it is gone: a process whose lease connection broke (the database restarted, the network cut)
still believes it drives. So every ``Leases`` proves its connection alive every ``heartbeat`` seconds, and when a
check or a call finds it broken it does not give its leases up at once: a blip (a failover, a restart, a
terminated backend) would otherwise end every run driven here. It keeps driving and opens a new connection (at
each heartbeat), which takes every lease held back with ``pg_try_advisory_lock``: a lease nobody took meanwhile is
simply held again; one another process took is given up (``on_lost``, whose owners stop driving that run at once,
recording nothing). When no new connection can be had within ``lapse`` seconds, every lease is given up the same
way, and a later pass claims them again when the database is back and nobody else took them.

The window this leaves: from the database releasing the locks (the old connection's end) to the holder taking them
back or giving them up (at most ``lapse`` plus a heartbeat and ``CHECK_TIMEOUT_S``), another process that looks
may take a run and drive it beside the holder; the holder gives it up at its next connection. Take-over passes run
far less often than that (a run is taken over only after its driver's death is noticed), and the steps a second
driver re-runs are the ones a dead driver would have left, as on one host.

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
import time
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
from sqlalchemy.engine import URL

from hangar.core.dbfailures import first_line_without, secrets_of, shown
from hangar.core.lapse import LAPSE_DEFAULT_S, lapse_of

log = logging.getLogger(__name__)

APPLICATION_NAME = "hangar leases"
HEARTBEAT_S = 1.0
CHECK_TIMEOUT_S = 5.0
# How long leases are kept through a broken lease connection: a new connection within it takes them back. The
# server setting ``leases.lapseSeconds`` changes it (``hangar.core.lapse``), read at every heartbeat.
LAPSE_S = float(LAPSE_DEFAULT_S)
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
    leases given up: taken by another process while the connection was away, or all of them when it stayed away
    longer than ``lapse``; they are no longer held."""

    def __init__(
        self,
        url: URL,
        *,
        heartbeat: float = HEARTBEAT_S,
        lapse: float = LAPSE_S,
        read_lapse: Callable[[], Awaitable[Any]] | None = None,
    ) -> None:
        self._conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self._target = shown(url)
        self._secrets = secrets_of(url)
        self.heartbeat = heartbeat
        self.lapse = lapse
        # The setting's stored value (``leases.lapseSeconds``), read at every heartbeat; None: ``lapse`` stays.
        self._read_lapse = read_lapse
        # After the lapse was lowered: the one before, and until when (monotonic) take-overs still wait for it.
        self._lowered: tuple[float, float] | None = None
        self._conn: psycopg.AsyncConnection[tuple[object, ...]] | None = None
        self._lock = asyncio.Lock()
        self._held: set[tuple[str, str]] = set()
        self._watchers: list[OnLost] = []
        self._beat: asyncio.Task[None] | None = None
        self._broken_at: float | None = None  # when the connection was found broken with leases held
        self.fenced = 0  # how many times leases were given up after a loss of the connection (tests and logs)
        self.regained = 0  # how many times every lease held was taken back on a new connection within the lapse

    @property
    def takeover_after(self) -> float:
        """How long a lease must be seen free before another process takes over the run it guarded: by then its
        holder has either taken it back (and the second look finds it held) or given it up, however slowly its
        checks and its connection attempts failed. A lapse just lowered is waited for at its former length until
        every holder has read the new one (a holder cut off from the database still counts the old)."""
        lapse = self.lapse
        if self._lowered is not None:
            before, until = self._lowered
            if time.monotonic() < until:
                lapse = max(lapse, before)
            else:
                self._lowered = None
        return lapse + self.heartbeat + CHECK_TIMEOUT_S + _CONNECT_TIMEOUT_S

    async def refresh_lapse(self) -> None:
        """Read the setting (``leases.lapseSeconds``) again; a failed read keeps the lapse as it was."""
        if self._read_lapse is None:
            return
        try:
            lapse = lapse_of(await self._read_lapse())
        except Exception:
            return
        if lapse < self.lapse:
            # Until a holder that read the old value has given its leases up under it, take-overs wait for it.
            self._lowered = (self.lapse, time.monotonic() + self.takeover_after)
        if lapse != self.lapse:
            log.info("the lease lapse is now %g s (leases.lapseSeconds)", lapse)
        self.lapse = lapse

    def on_lost(self, callback: OnLost) -> None:
        self._watchers.append(callback)

    @property
    def backend_pid(self) -> int | None:
        return None if self._conn is None or self._conn.closed else self._conn.info.backend_pid

    def holds(self, kind: str, ident: str) -> bool:
        return (kind, ident) in self._held

    async def _connection(self) -> psycopg.AsyncConnection[tuple[object, ...]]:
        """The lease connection; a new one takes back every lease held (``_retake``)."""
        if self._conn is None or self._conn.closed:
            conn = await psycopg.AsyncConnection.connect(
                self._conninfo, autocommit=True, connect_timeout=_CONNECT_TIMEOUT_S, application_name=APPLICATION_NAME
            )
            try:
                for statement in _KEEPALIVES:
                    await conn.execute(statement)
                await self._retake(conn)
            except BaseException:
                await conn.close()
                raise
            self._conn = conn
        if self._beat is None or self._beat.done():
            self._beat = asyncio.get_running_loop().create_task(self._heartbeat(), name="leases:heartbeat")
        return self._conn

    async def _retake(self, conn: psycopg.AsyncConnection[tuple[object, ...]]) -> None:
        """On a new connection: take every lease held again (the old connection's locks went with it). What
        another process took meanwhile is given up (``on_lost``); the rest is held on as if nothing happened."""
        self._broken_at = None
        if not self._held:
            return
        keys = sorted(self._held)
        cur = await asyncio.wait_for(
            conn.execute(
                f"SELECT pg_try_advisory_lock({_KEY.replace('%s', 'k')}) FROM unnest(%s::text[]) WITH ORDINALITY "
                "AS t(k, n) ORDER BY n",
                ([lease_name(kind, ident) for kind, ident in keys],),
            ),
            CHECK_TIMEOUT_S,
        )
        taken = [bool(row[0]) for row in await cur.fetchall()]
        lost = [key for key, ok in zip(keys, taken, strict=True) if not ok]
        if not lost:
            self.regained += 1
            log.warning("the lease connection to %s is back: every run driven here goes on", self._target)
            return
        self._give_up(lost, "another process took them while the lease connection was away")

    def _broken(self, exc: BaseException) -> None:
        """The connection failed: drop it. Leases held are kept for ``lapse`` (a new connection takes them back);
        the heartbeat gives them up when it cannot within that."""
        conn, self._conn = self._conn, None
        if conn is not None and not conn.closed:
            task = asyncio.get_running_loop().create_task(conn.close())
            task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)
        if self._held and self._broken_at is None:
            self._broken_at = asyncio.get_running_loop().time()
            log.warning(
                "lost the lease connection to %s (%s): the %d run(s) driven here go on while it is taken again "
                "within %g s",
                self._target,
                self._reason(exc),
                len(self._held),
                self.lapse,
            )

    async def _call(self, sql: str, name: str) -> bool:
        """One lock call on the lease connection. A connection found broken is replaced once (after a database
        restart the next claim just works, and the new connection takes back the leases held); ``LeaseLost``
        when that fails too."""
        async with self._lock:
            for attempt in (1, 2):
                fresh = self._conn is None or self._conn.closed
                try:
                    conn = await self._connection()
                    cur = await asyncio.wait_for(conn.execute(sql, (name,)), CHECK_TIMEOUT_S)
                    row = await cur.fetchone()
                except (psycopg.Error, OSError, TimeoutError) as exc:
                    self._broken(exc)
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
        """Prove the connection alive while leases are held; when it is broken, open a new one (which takes the
        leases back), and give every lease up once it has been broken for ``lapse``."""
        while True:
            await asyncio.sleep(self.heartbeat)
            if self._conn is not None and not self._conn.closed:
                await self.refresh_lapse()  # through the pool: only while the database answers
            if not self._held:
                continue
            async with self._lock:
                try:
                    if self._conn is None or self._conn.closed:
                        await self._connection()
                    else:
                        await asyncio.wait_for(self._conn.execute("SELECT 1"), CHECK_TIMEOUT_S)
                except (psycopg.Error, OSError, TimeoutError) as exc:
                    self._broken(exc)
                    broken_at = self._broken_at
                    if broken_at is not None and asyncio.get_running_loop().time() - broken_at >= self.lapse:
                        self._give_up(sorted(self._held), f"it stayed away {self.lapse:g} s ({self._reason(exc)})")

    def _give_up(self, lost: list[tuple[str, str]], why: str) -> None:
        """Stop holding ``lost`` (its owners stop driving those runs) and say so once."""
        self._held.difference_update(lost)
        if not self._held:
            self._broken_at = None
        self.fenced += 1
        log.warning(
            "lost the lease connection to %s: stopped driving %d run(s) here (%s); they are taken again when "
            "the database is back and no other process holds them",
            self._target,
            len(lost),
            why,
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


__all__ = ["CHECK_TIMEOUT_S", "HEARTBEAT_S", "LAPSE_S", "LeaseLost", "Leases", "lease_name"]
