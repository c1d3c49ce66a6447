"""Run control across processes: one driver per run, stop requests any process can make, and taking over the runs
a dead driver left. Pipeline runs and agent runs both use it, each kind under its own directory of per-run control
directories (``<dataDir>/pipelines/.control/<runId>/``, ``<dataDir>/agents/runs/<runId>/``).

The server and ``hangar`` commands may share a data directory; whoever drives a run holds an exclusive advisory
lock on ``<controlDir>/.driver.lock``, and anyone else refuses to drive it. The kernel releases the lock when the
holder's process ends, however it ends (kill -9 included), so a crashed run can be taken over at once: no lease to
expire, no heartbeat. The descriptor is not inherited by step scripts (Python opens files non-inheritable), so an
orphaned script cannot keep it.

A process that does not drive a run asks its driver to stop it by writing ``<controlDir>/.stop`` (a small JSON note
of who asked and when). The file outlives both processes: the driver notices it within ``STOP_POLL_S`` (a stat per
run it holds), and whoever takes the run next (after the driver died) honours it before anything runs. Host
processes a driver started record their process groups in the same directory (``hangar.core.procs``); whoever takes
the lock next kills what a dead driver left running.

A control directory lies outside every directory a run's (confined) scripts can write, so nothing they do can
steer the driver or the host.

On PostgreSQL (servers on several hosts, each with its own filesystem) the claim and the stop request move to the
database, and the flock and ``.stop`` note above are not used: the driver holds a lease (a session-level advisory
lock on its process's lease connection, ``hangar.core.leases``, which says why that and not lease rows), and a
stop request is a ``run_stop_requests`` row (who asked, when) in the run's workspace, which the driver reads
every ``STOP_POLL_DB_S`` (one query for the runs it holds in a workspace) and whoever takes the run next honours
before anything runs. A process whose lease connection breaks keeps driving while it takes its leases back on a
new connection, and stops driving (``on_fenced``, recording nothing) the runs it cannot: taken by another process
meanwhile, or all of them once the connection stayed away past the lease's lapse. The periodic looks for
abandoned runs take a run over only once its lease has stayed free past that (``abandoned``).
Process-group records stay in the control directory on the driver's host: only that host can signal those
processes. When that host died its processes died with it, and a driver on another host finds no records
there; when only the driving process died, a later driver on the same host
(one data directory) kills what it left, as on SQLite.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa

from hangar.core.fileio import write_private_atomic
from hangar.core.paths import contained
from hangar.core.portable_sql import insert_ignoring
from hangar.core.procs import kill_orphaned_groups
from hangar.core.tables import run_stop_requests
from hangar.errors import Conflict, Unavailable

if TYPE_CHECKING:
    from hangar.core.db import Databases
    from hangar.core.leases import Leases

log = logging.getLogger(__name__)

LOCK_NAME = ".driver.lock"
STOP_NAME = ".stop"
# How often a driving process looks for stop requests (a stat per held run), how often a requester looks whether
# the run has ended (one row read), and how long it waits for that.
STOP_POLL_S = 0.05
# On PostgreSQL the look is a query per workspace with held runs, not a stat: a little less often.
STOP_POLL_DB_S = 0.2
END_POLL_S = 0.025
STOP_WAIT_S = 20.0


class DrivenElsewhere(Conflict):
    """Another process is driving this run."""

    def __init__(self, run_id: str, kind: str = "run") -> None:
        super().__init__(f"{kind} {run_id} is being driven by another process", detail_code="run_locked")


class DriverLock:
    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @classmethod
    def try_acquire(cls, control_dir: Path) -> DriverLock | None:
        """The run's lock, or ``None`` when another holder (this process included) has it."""
        control_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(control_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return cls(fd)

    @classmethod
    def acquire(cls, control_dir: Path, run_id: str, *, kind: str = "run") -> DriverLock:
        lock = cls.try_acquire(control_dir)
        if lock is None:
            raise DrivenElsewhere(run_id, kind)
        return lock

    def release(self) -> None:
        """Safe to call twice."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def is_driven(control_dir: Path) -> bool:
    """Whether some process (this one included) holds the run's driver lock right now."""
    if not (control_dir / LOCK_NAME).exists():
        return False
    lock = DriverLock.try_acquire(control_dir)
    if lock is None:
        return True
    lock.release()
    return False


def request_stop(control_dir: Path, by: str, at: datetime) -> None:
    """Record a stop request for whoever drives the run (now or next); written whole and synced, so it survives
    either process dying. The first request stands (who asked first, and when): a later one leaves it."""
    write_private_atomic(control_dir / STOP_NAME, json.dumps({"by": by, "at": at.isoformat()}).encode(), keep=True)


def stop_requested(control_dir: Path) -> bool:
    return (control_dir / STOP_NAME).exists()


def clear_stop(control_dir: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (control_dir / STOP_NAME).unlink()


@dataclass(frozen=True)
class Takeover:
    """What taking a run's lock found: a stop requested before (the taker honours it before anything runs), and
    how many process groups a dead earlier driver had left running (killed)."""

    stop_requested: bool
    killed: int


@dataclass
class _Held:
    lock: DriverLock | None  # None: held as a lease in the database
    control_dir: Path
    stop_seen: bool
    workspace_id: str | None


class RunControl:
    """One process's side of the control of one kind of run (``kind`` names it in messages: "pipeline run").

    ``on_stop(run_id)`` is called, on the event loop, for a stop request another process writes while this one
    holds the run; it returns whether the stop is in hand (``False``: offer it again at the next look, e.g. while
    the run is between being taken and being driven). Given ``dbs`` on PostgreSQL, claims and stop requests are
    in the database (the module's docstring); ``on_fenced(run_id)`` is then called for each run this process
    stopped holding because its lease connection broke: stop driving it at once and record nothing."""

    def __init__(
        self,
        root: Path,
        *,
        kind: str,
        on_stop: Callable[[str], bool],
        dbs: Databases | None = None,
        on_fenced: Callable[[str], None] | None = None,
    ) -> None:
        self.root = root
        self.kind = kind
        self._on_stop = on_stop
        self._on_fenced = on_fenced
        self._dbs = dbs if dbs is not None and dbs.postgresql_url is not None else None
        self._leases: Leases | None = None
        self._held: dict[str, _Held] = {}
        self._watch: asyncio.Task[None] | None = None
        self._releasing: set[asyncio.Task[None]] = set()
        self._seen_free: dict[str, float] = {}  # run -> when its lease was first seen free (``abandoned``)

    @property
    def in_database(self) -> bool:
        """Whether claims and stop requests are in the database (PostgreSQL) rather than the control directory."""
        return self._dbs is not None

    def _lease_set(self) -> Leases:
        if self._leases is None:
            assert self._dbs is not None
            self._leases = self._dbs.leases()
            self._leases.on_lost(self._lost)
        return self._leases

    def _lost(self, keys: list[tuple[str, str]]) -> None:
        for kind, run_id in keys:
            if kind == self.kind and self._held.pop(run_id, None) is not None and self._on_fenced is not None:
                self._on_fenced(run_id)

    def control_dir(self, run_id: str) -> Path:
        return contained(self.root, run_id, field="runId")

    def holds(self, run_id: str) -> bool:
        return run_id in self._held

    async def driven_elsewhere(self, run_id: str) -> bool:
        """Whether another process drives the run right now (its driver lock, or on PostgreSQL its lease, held
        and not by this process)."""
        if self.holds(run_id):
            return False
        if self._dbs is None:
            return await asyncio.to_thread(is_driven, self.control_dir(run_id))
        return await self._lease_set().is_claimed(self.kind, run_id)

    async def try_take(self, run_id: str, *, workspace_id: str | None = None) -> Takeover | None:
        """Become the run's driver, or ``None`` when another holder (this process included) drives it.

        Processes an earlier driver of the run started and could not stop (it died) are killed first: they must
        not run on beside what this driver re-runs or the stop it carries out. Until ``release``, stop requests
        written from now on reach ``on_stop``; one written before is reported in the result. On PostgreSQL the
        run's ``workspace_id`` is required (its stop requests are rows there); a broken lease connection is
        ``Unavailable``."""
        control_dir = self.control_dir(run_id)
        lock: DriverLock | None = None
        if self._dbs is not None:
            from hangar.core.leases import LeaseLost  # psycopg loads only for PostgreSQL

            if workspace_id is None:
                raise ValueError("a run's workspace is needed to take it on PostgreSQL")
            if run_id in self._held:
                return None
            try:
                if not await self._lease_set().try_claim(self.kind, run_id):
                    return None
            except LeaseLost as exc:
                raise Unavailable(f"{self.kind} {run_id} cannot be taken: {exc}") from exc
            stop = await self._stop_row(workspace_id, run_id)
        else:
            lock = DriverLock.try_acquire(control_dir)
            if lock is None:
                return None
            stop = stop_requested(control_dir)
        killed = kill_orphaned_groups(control_dir)
        if killed:
            log.info("%s %s: killed %d process group(s) its previous driver left running", self.kind, run_id, killed)
        self._held[run_id] = _Held(lock, control_dir, stop_seen=stop, workspace_id=workspace_id)
        if self._watch is None or self._watch.done():
            self._watch = asyncio.get_running_loop().create_task(self._watch_stops(), name=f"{self.kind} stops")
        return Takeover(stop_requested=stop, killed=killed)

    async def abandoned(self, run_id: str) -> bool:
        """Whether a run another process was driving may be taken over now (the periodic looks for abandoned
        runs ask before they take). On PostgreSQL a free lease is not yet an abandoned run: its holder may be
        taking it back after a blip of its lease connection (``hangar.core.leases``). So the lease must be seen
        free at two looks at least ``takeover_after`` apart; a look that finds it held starts over. Elsewhere
        (a flock, released only with its holder) free is abandoned."""
        if self._dbs is None:
            return True
        from hangar.core.leases import LeaseLost

        if run_id in self._held:
            return False
        leases = self._lease_set()
        now = asyncio.get_running_loop().time()
        try:
            held = await leases.is_claimed(self.kind, run_id)
        except LeaseLost as exc:
            raise Unavailable(f"{self.kind} {run_id} cannot be taken: {exc}") from exc
        if held:
            self._seen_free.pop(run_id, None)
            return False
        first = self._seen_free.setdefault(run_id, now)
        if now - first < leases.takeover_after:
            return False
        del self._seen_free[run_id]
        return True

    async def try_take_abandoned(self, run_id: str, *, workspace_id: str) -> Takeover | None:
        """``try_take`` once ``abandoned`` says the run may be taken over."""
        if not await self.abandoned(run_id):
            return None
        return await self.try_take(run_id, workspace_id=workspace_id)

    async def take(self, run_id: str, *, workspace_id: str | None = None) -> Takeover:
        """``try_take``, raising ``DrivenElsewhere`` when the run is driven."""
        took = await self.try_take(run_id, workspace_id=workspace_id)
        if took is None:
            raise DrivenElsewhere(run_id, self.kind)
        return took

    def release(self, run_id: str, *, ended: bool = False) -> None:
        """Give up driving the run (its lock goes); safe when it is not held. ``ended``: the run's end is stored,
        so its stop request (a row, on PostgreSQL) goes too."""
        held = self._held.pop(run_id, None)
        if held is None:
            return
        if held.lock is not None:
            held.lock.release()
        elif self._leases is not None:
            task = asyncio.get_running_loop().create_task(self._let_go(run_id, held.workspace_id, ended))
            self._releasing.add(task)
            task.add_done_callback(self._releasing.discard)

    async def _let_go(self, run_id: str, workspace_id: str | None, ended: bool) -> None:
        assert self._leases is not None and self._dbs is not None
        if ended and workspace_id is not None:
            try:
                engine = await self._dbs.workspace(workspace_id)
                t = run_stop_requests
                async with engine.begin() as conn:
                    await conn.execute(sa.delete(t).where(t.c.kind == self.kind, t.c.run_id == run_id))
            except Exception as exc:  # a leftover row names a finished run: nothing reads it again
                # One line: the usual cause is the run's workspace deleted meanwhile, its records with it.
                log.warning("%s %s: its stop request could not be removed (%s)", self.kind, run_id, type(exc).__name__)
        await self._leases.release(self.kind, run_id)

    def remove(self, run_id: str) -> None:
        """Remove the run's control directory (lock file, stop request, process records): for runs whose end is
        stored, when nothing else is kept there."""
        shutil.rmtree(self.control_dir(run_id), ignore_errors=True)

    async def _stop_row(self, workspace_id: str, run_id: str) -> bool:
        assert self._dbs is not None
        engine = await self._dbs.workspace(workspace_id)
        t = run_stop_requests
        async with engine.connect() as conn:
            found = await conn.execute(sa.select(t.c.run_id).where(t.c.kind == self.kind, t.c.run_id == run_id))
            return found.first() is not None

    async def _stopped_rows(self, workspace_id: str, run_ids: list[str]) -> set[str]:
        assert self._dbs is not None
        engine = await self._dbs.workspace(workspace_id)
        t = run_stop_requests
        async with engine.connect() as conn:
            rows = await conn.execute(sa.select(t.c.run_id).where(t.c.kind == self.kind, t.c.run_id.in_(run_ids)))
            return {r[0] for r in rows}

    async def _request_stop(self, run_id: str, workspace_id: str | None, by: str, at: datetime) -> None:
        if self._dbs is None:
            request_stop(self.control_dir(run_id), by, at)
            return
        if workspace_id is None:
            raise ValueError("a run's workspace is needed to stop it on PostgreSQL")
        engine = await self._dbs.workspace(workspace_id)
        t = run_stop_requests
        row = {"kind": self.kind, "run_id": run_id, "requested_by": by, "requested_at": at}
        async with engine.begin() as conn:
            # The first request stands (who asked first, and when): a concurrent second one is no conflict (a
            # look-then-insert would let both look and the second fail on the key).
            await conn.execute(insert_ignoring(conn.dialect.name, t).values(**row))

    async def _new_stops(self) -> list[str]:
        """The held runs with a stop request not yet handed to ``on_stop``."""
        waiting = {run_id: held for run_id, held in self._held.items() if not held.stop_seen}
        if self._dbs is None:
            return [run_id for run_id, held in waiting.items() if stop_requested(held.control_dir)]
        by_workspace: dict[str, list[str]] = {}
        for run_id, held in waiting.items():
            by_workspace.setdefault(held.workspace_id or "", []).append(run_id)
        found: list[str] = []
        for ws, run_ids in by_workspace.items():
            try:
                found += await self._stopped_rows(ws, run_ids)
            except Exception:  # the next look tries again (the database may be briefly away)
                log.warning("%s stop requests of workspace %s could not be read", self.kind, ws, exc_info=True)
        return found

    async def _watch_stops(self) -> None:
        """While this process holds runs: hand each stop request another process wrote to ``on_stop`` (a stat per
        held run every ``STOP_POLL_S``, or one query per workspace every ``STOP_POLL_DB_S`` on PostgreSQL)."""
        while self._held:
            await asyncio.sleep(STOP_POLL_S if self._dbs is None else STOP_POLL_DB_S)
            for run_id in await self._new_stops():
                held = self._held.get(run_id)
                if held is not None and not held.stop_seen:
                    held.stop_seen = self._on_stop(run_id)

    async def stop(
        self,
        run_id: str,
        *,
        by: str,
        at: datetime,
        stop_here: Callable[[], Awaitable[bool]],
        ended: Callable[[], Awaitable[bool]],
        wait_s: float = STOP_WAIT_S,
        workspace_id: str | None = None,
    ) -> None:
        """Record a stop request for whoever drives the run (so it stands whatever happens next) and return once
        the run has ended, whichever process drives it.

        ``stop_here`` tries to end the run in this process (it can when nobody else drives it: it was never taken,
        or its driver died) and returns whether it did; it is tried again at every look, so a driver that dies
        while this one waits is replaced. ``ended`` reads whether the run has ended meanwhile. After ``wait_s``
        without an end: ``Unavailable`` (``stop_pending``), and the request stands."""
        await self._request_stop(run_id, workspace_id, by, at)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while not await stop_here():
            await asyncio.sleep(END_POLL_S)
            if await ended():
                return
            if loop.time() >= deadline:
                raise Unavailable(
                    f"{self.kind} {run_id} is driven by another process that has not stopped it within "
                    f"{wait_s:g} s; the request stands and is carried out when that process sees it",
                    detail_code="stop_pending",
                )

    async def aclose(self) -> None:
        """Stop looking for stop requests (the runs' drivers release what they hold as they stop)."""
        if self._watch is not None:
            self._watch.cancel()
            await asyncio.gather(self._watch, return_exceptions=True)
            self._watch = None
        await asyncio.gather(*self._releasing, return_exceptions=True)


__all__ = [
    "END_POLL_S",
    "LOCK_NAME",
    "STOP_NAME",
    "STOP_POLL_DB_S",
    "STOP_POLL_S",
    "STOP_WAIT_S",
    "DrivenElsewhere",
    "DriverLock",
    "RunControl",
    "Takeover",
    "clear_stop",
    "is_driven",
    "request_stop",
    "stop_requested",
]
