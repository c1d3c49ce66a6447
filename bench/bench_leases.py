"""Driver leases on PostgreSQL (``hangar.core.leases``) against the flock they stand for on SQLite, in one run.

- claim and release: one run's lease taken and given back, ``--cycles`` times, one after the other (a run's start
  and end each pay this once); the flock of a control directory the same way;
- take-over: a holder's lease connection is terminated (as when its process or host dies) and another process's
  ``Leases`` tries to claim every 10 ms: the time until it holds the lease; and the time until the holder has
  fenced itself (its heartbeat, 1 s by default, finds the connection gone).

Run: ``.venv/bin/python bench/bench_leases.py [--cycles N] [--rounds N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from sqlalchemy.engine import make_url
from tests.support.postgres import PostgresCluster

from hangar.core.leases import Leases
from hangar.core.postgresql import postgresql_url
from hangar.core.runcontrol import DriverLock


async def claim_release(url: str, cycles: int) -> float:
    leases = Leases(postgresql_url(url))
    try:
        await leases.try_claim("bench", "warm")
        started = time.perf_counter()
        for i in range(cycles):
            assert await leases.try_claim("bench", f"r{i}")
            await leases.release("bench", f"r{i}")
        return (time.perf_counter() - started) / cycles * 1e6
    finally:
        await leases.aclose()


def flock_cycles(root: Path, cycles: int) -> float:
    started = time.perf_counter()
    for i in range(cycles):
        lock = DriverLock.try_acquire(root / f"r{i}")
        assert lock is not None
        lock.release()
    return (time.perf_counter() - started) / cycles * 1e6


async def take_over(url: str, rounds: int) -> tuple[list[float], list[float]]:
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    taken: list[float] = []
    fenced: list[float] = []
    for n in range(rounds):
        holder, other = Leases(postgresql_url(url)), Leases(postgresql_url(url))
        lost = asyncio.Event()
        holder.on_lost(lambda _keys, done=lost: done.set())
        try:
            assert await holder.try_claim("bench", f"t{n}")
            assert not await other.try_claim("bench", f"t{n}")
            with psycopg.connect(conninfo, autocommit=True) as admin:
                started = time.monotonic()
                admin.execute("SELECT pg_terminate_backend(%s)", (holder.backend_pid,))
            while not await other.try_claim("bench", f"t{n}"):
                await asyncio.sleep(0.01)
            taken.append((time.monotonic() - started) * 1000)
            await lost.wait()
            fenced.append((time.monotonic() - started) * 1000)
        finally:
            await holder.aclose()
            await other.aclose()
    return taken, fenced


async def main(cycles: int, rounds: int) -> None:
    cluster = PostgresCluster.start()
    try:
        with cluster.database() as name, tempfile.TemporaryDirectory(prefix="hbl-") as root:
            url = cluster.url(name)
            lease_us = await claim_release(url, cycles)
            flock_us = flock_cycles(Path(root), cycles)
            taken, fenced = await take_over(url, rounds)
    finally:
        cluster.stop()
    print(f"claim and release, {cycles} runs one after the other")
    print(f"  PostgreSQL advisory lock   {lease_us:8.0f} µs per run")
    print(f"  flock of a control dir     {flock_us:8.0f} µs per run")
    print(f"take-over after the holder's connection is terminated, {rounds} rounds")
    print(f"  another process holds it   p50 {statistics.median(taken):6.0f} ms   max {max(taken):6.0f} ms")
    print(f"  the holder has fenced      p50 {statistics.median(fenced):6.0f} ms   max {max(fenced):6.0f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(main(args.cycles, args.rounds))
