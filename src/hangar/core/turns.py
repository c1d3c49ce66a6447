"""Taking turns between processes that share a data directory: a periodic job (a scheduled backup, a retention
pass, a check of the image packs) runs in one of them per pass. The turn is an exclusive ``flock`` on a file, tried
without waiting: whoever holds it does the job, the others skip this pass.

The kernel releases the lock when its holder dies, however it dies, so a server killed mid-pass leaves no turn held.
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
def taking_turn(path: Path) -> Iterator[bool]:
    """Whether this process holds the turn kept in ``path`` (another process sharing it may), for the block."""
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
