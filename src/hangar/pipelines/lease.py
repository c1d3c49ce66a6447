"""One driver per run across processes, and stop requests any process can make.

The server and ``hangar pipeline`` commands may share a data directory; whoever drives a run holds an exclusive
advisory lock on ``<runDir>/.driver.lock``, and anyone else refuses to drive it. The kernel releases the lock when
the holder's process ends, however it ends (kill -9 included), so a crashed run can be resumed at once: no lease
to expire, no heartbeat. The descriptor is not inherited by step scripts (Python opens files non-inheritable), so
an orphaned script cannot keep it.

A process that does not drive a run asks its driver to stop it by writing ``<runDir>/.stop`` (a small JSON note
of who asked and when). The file outlives both processes: the driver notices it within ``STOP_POLL_S`` (a stat
per live run), and whoever drives the run next (after the driver died) honours it before anything runs. Agent
runs use the same two files under their own directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from datetime import datetime
from pathlib import Path

from hangar.core.fileio import write_private_atomic
from hangar.errors import Conflict

LOCK_NAME = ".driver.lock"
STOP_NAME = ".stop"
# How often a driving process looks for stop requests (a stat per live run), how often a requester looks whether
# the run has ended (one row read), and how long it waits for that.
STOP_POLL_S = 0.05
END_POLL_S = 0.025
STOP_WAIT_S = 20.0


class DrivenElsewhere(Conflict):
    """Another process is driving this run."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"pipeline run {run_id} is being driven by another process", detail_code="run_locked")


class DriverLock:
    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @classmethod
    def try_acquire(cls, run_dir: Path) -> DriverLock | None:
        """The run's lock, or ``None`` when another holder (this process included) has it."""
        run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(run_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return cls(fd)

    @classmethod
    def acquire(cls, run_dir: Path, run_id: str) -> DriverLock:
        lock = cls.try_acquire(run_dir)
        if lock is None:
            raise DrivenElsewhere(run_id)
        return lock

    def release(self) -> None:
        """Safe to call twice."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def is_driven(run_dir: Path) -> bool:
    """Whether some process (this one included) holds the run's driver lock right now."""
    if not (run_dir / LOCK_NAME).exists():
        return False
    lock = DriverLock.try_acquire(run_dir)
    if lock is None:
        return True
    lock.release()
    return False


def request_stop(run_dir: Path, by: str, at: datetime) -> None:
    """Record a stop request for whoever drives the run (now or next); written whole and synced, so it survives
    either process dying."""
    write_private_atomic(run_dir / STOP_NAME, json.dumps({"by": by, "at": at.isoformat()}).encode())


def stop_requested(run_dir: Path) -> bool:
    return (run_dir / STOP_NAME).exists()


def clear_stop(run_dir: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (run_dir / STOP_NAME).unlink()
