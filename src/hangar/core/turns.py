"""Taking turns between processes that share a data directory: scheduled work (a backup, a retention pass) that
one server does for all of them holds an exclusive ``flock`` on a file in the data directory while it works.

A lock the kernel releases when its holder dies, however it dies, so a server killed mid-pass leaves no turn held.
Servers that share a PostgreSQL database but not a data directory also need the schedule's own record in the
database to say the work is not due (``hangar.retention.schedule`` claims its pass there).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def turn(path: Path) -> Iterator[bool]:
    """Whether this process holds the turn named by ``path`` (another process sharing the data directory may)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)
