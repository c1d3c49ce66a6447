"""A run's driver lock held by another, live process: what a second driver (the server beside a
``hangar pipeline`` command) looks like to the process under test."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.engine import URL

from hangar.core.db import Databases

if TYPE_CHECKING:
    from hangar.core.leases import Leases

_HOLD = (
    "import fcntl, sys, time; f = open(sys.argv[1], 'w'); fcntl.flock(f, fcntl.LOCK_EX);"
    " print('held', flush=True); time.sleep(60)"
)


@contextlib.contextmanager
def lock_held_elsewhere(lock_file: Path) -> Iterator[None]:
    """Another process holds an exclusive flock on ``lock_file`` until the block ends (then it is killed)."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(lock_file)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield
    finally:
        holder.kill()
        holder.wait()


async def lease_elsewhere(url: URL | None, kind: str, run_id: str) -> Leases | None:
    """On PostgreSQL (``url``), the lease of the run ``run_id`` of ``kind`` taken on another connection (what
    another server or command driving it holds), until its ``aclose``; None on SQLite files."""
    if url is None:
        return None
    from hangar.core.leases import Leases  # psycopg loads only for PostgreSQL

    other = Leases(url)
    assert await other.try_claim(kind, run_id)
    return other


@contextlib.asynccontextmanager
async def driver_held_elsewhere(dbs: Databases, kind: str, run_id: str, lock_file: Path) -> AsyncIterator[None]:
    """Another driver holds the run ``run_id`` of ``kind`` until the block ends: on SQLite files, another process's
    flock on ``lock_file``; on PostgreSQL, the run's lease on another connection (``lease_elsewhere``)."""
    other = await lease_elsewhere(dbs.postgresql_url, kind, run_id)
    if other is None:
        with lock_held_elsewhere(lock_file):
            yield
        return
    try:
        yield
    finally:
        await let_go(other, kind, run_id)


async def let_go(held: Leases, kind: str, run_id: str) -> None:
    """Release a lease ``lease_elsewhere`` took, at once (a closed connection's locks go only when the server has
    ended its session, a moment later), and close its connection."""
    await held.release(kind, run_id)
    await held.aclose()


# Why a test of taking over a dead driver's run at once is SQLite's: a dead driver's flock is free at once, while on
# PostgreSQL a free lease waits out its lapse first (tests/integration/test_servers_on_one_postgresql.py).
LEASE_LAPSE = "a dead driver's run is taken over at once, which on PostgreSQL waits out the lease's lapse"
