"""One driver per run across processes: an exclusive advisory lock on ``<runDir>/.driver.lock``.

The server and ``hangar pipeline`` commands may share a data directory; whoever drives a run holds the lock, and
anyone else refuses to drive it. The kernel releases the lock when the holder's process ends, however it ends
(kill -9 included), so a crashed run can be resumed at once: no lease to expire, no heartbeat. The descriptor is
not inherited by step scripts (Python opens files non-inheritable), so an orphaned script cannot keep it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from hangar.errors import Conflict

LOCK_NAME = ".driver.lock"


class DrivenElsewhere(Conflict):
    """Another process is driving this run."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"pipeline run {run_id} is being driven by another process", detail_code="run_locked")


class DriverLock:
    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, run_dir: Path, run_id: str) -> DriverLock:
        run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(run_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DrivenElsewhere(run_id) from None
        return cls(fd)

    def release(self) -> None:
        """Safe to call twice."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
