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

from hangar.core.fileio import write_private_atomic
from hangar.core.paths import contained
from hangar.core.procs import kill_orphaned_groups
from hangar.errors import Conflict, Unavailable

log = logging.getLogger(__name__)

LOCK_NAME = ".driver.lock"
STOP_NAME = ".stop"
# How often a driving process looks for stop requests (a stat per held run), how often a requester looks whether
# the run has ended (one row read), and how long it waits for that.
STOP_POLL_S = 0.05
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
        fd = os.open(control_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
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
    either process dying."""
    write_private_atomic(control_dir / STOP_NAME, json.dumps({"by": by, "at": at.isoformat()}).encode())


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
    lock: DriverLock
    control_dir: Path
    stop_seen: bool


class RunControl:
    """One process's side of the control of one kind of run (``kind`` names it in messages: "pipeline run").

    ``on_stop(run_id)`` is called, on the event loop, for a stop request another process writes while this one
    holds the run; it returns whether the stop is in hand (``False``: offer it again at the next look, e.g. while
    the run is between being taken and being driven)."""

    def __init__(self, root: Path, *, kind: str, on_stop: Callable[[str], bool]) -> None:
        self.root = root
        self.kind = kind
        self._on_stop = on_stop
        self._held: dict[str, _Held] = {}
        self._watch: asyncio.Task[None] | None = None

    def control_dir(self, run_id: str) -> Path:
        return contained(self.root, run_id, field="runId")

    def holds(self, run_id: str) -> bool:
        return run_id in self._held

    def try_take(self, run_id: str) -> Takeover | None:
        """Become the run's driver, or ``None`` when another holder (this process included) drives it.

        Processes an earlier driver of the run started and could not stop (it died) are killed first: they must
        not run on beside what this driver re-runs or the stop it carries out. Until ``release``, stop requests
        written from now on reach ``on_stop``; one written before is reported in the result."""
        control_dir = self.control_dir(run_id)
        lock = DriverLock.try_acquire(control_dir)
        if lock is None:
            return None
        killed = kill_orphaned_groups(control_dir)
        if killed:
            log.info("%s %s: killed %d process group(s) its previous driver left running", self.kind, run_id, killed)
        stop = stop_requested(control_dir)
        self._held[run_id] = _Held(lock, control_dir, stop_seen=stop)
        if self._watch is None or self._watch.done():
            self._watch = asyncio.get_running_loop().create_task(self._watch_stops(), name=f"{self.kind} stops")
        return Takeover(stop_requested=stop, killed=killed)

    def take(self, run_id: str) -> Takeover:
        """``try_take``, raising ``DrivenElsewhere`` when the run is driven."""
        took = self.try_take(run_id)
        if took is None:
            raise DrivenElsewhere(run_id, self.kind)
        return took

    def release(self, run_id: str) -> None:
        """Give up driving the run (its lock goes); safe when it is not held."""
        held = self._held.pop(run_id, None)
        if held is not None:
            held.lock.release()

    def remove(self, run_id: str) -> None:
        """Remove the run's control directory (lock file, stop request, process records): for runs whose end is
        stored, when nothing else is kept there."""
        shutil.rmtree(self.control_dir(run_id), ignore_errors=True)

    async def _watch_stops(self) -> None:
        """While this process holds runs: hand each stop request another process wrote to ``on_stop`` (a stat per
        held run every ``STOP_POLL_S``)."""
        while self._held:
            await asyncio.sleep(STOP_POLL_S)
            for run_id, held in list(self._held.items()):
                if not held.stop_seen and stop_requested(held.control_dir):
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
    ) -> None:
        """Record a stop request for whoever drives the run (so it stands whatever happens next) and return once
        the run has ended, whichever process drives it.

        ``stop_here`` tries to end the run in this process (it can when nobody else drives it: it was never taken,
        or its driver died) and returns whether it did; it is tried again at every look, so a driver that dies
        while this one waits is replaced. ``ended`` reads whether the run has ended meanwhile. After ``wait_s``
        without an end: ``Unavailable`` (``stop_pending``), and the request stands."""
        request_stop(self.control_dir(run_id), by, at)
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


__all__ = [
    "END_POLL_S",
    "LOCK_NAME",
    "STOP_NAME",
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
