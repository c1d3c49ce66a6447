"""One build at a time across every process of the suite.

The suite runs in parallel processes (pytest-xdist), and what a test builds on first use in the checkout (the web
client's ``web/dist``, an npm peer's ``node_modules``) is shared by all of them: two processes running ``npm ci`` in
one folder at once delete each other's files, and one that finds the build half done starts a peer from it. So the
check and the build happen under an exclusive lock on a file in that folder (``.test-build.lock``, ignored by git);
a process that finds the lock held waits for the build under way and then finds it done. A thread lock is not
enough: the workers are processes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path

LOCK_NAME = ".test-build.lock"
# flock is per open file: two threads of one process each opening the file would both get it, so they queue here.
_threads = threading.Lock()


@contextlib.contextmanager
def build_lock(folder: Path) -> Iterator[None]:
    """Held while the block runs; ``folder`` is the one the build writes in (it is never removed by the build)."""
    with _threads:
        fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock
