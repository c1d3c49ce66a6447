"""Event delivery latency across two processes: PostgreSQL's LISTEN/NOTIFY against SQLite's 0.25 s poll, in one run.

A second OS process (tests/support/event_writer.py) appends events to a workspace, one transaction each, at
random intervals (so the poll's phase is not the writer's); this process's event bus, tailing with its defaults,
hands each to a subscriber, which takes the time since the writer published it (``time.monotonic()``, one clock
for every process on the host). The same writer and bus run on a data directory (SQLite: the tail reads every
``tail_interval``) and on a throwaway PostgreSQL cluster (the listener wakes the bus at each commit).

Run: ``.venv/bin/python bench/bench_event_delivery.py [--events N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.event_writer import open_bus
from tests.support.postgres import PostgresCluster

from hangar.core.event_types import StoredEvent

REPO = Path(__file__).resolve().parent.parent
PACE_S = 0.05  # the writer waits up to this long (uniformly at random) between two events


def percentile(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


async def delivery(data: Path, url: str | None, events: int) -> list[float]:
    """Milliseconds from each event's publication in the writer process to its handling here."""
    latencies: list[float] = []
    async with open_bus(data, url) as bus:
        await bus._dbs.workspace("bench", create=True)

        async def record(ev: StoredEvent) -> None:
            latencies.append((time.monotonic() - float(ev.payload["sentAt"])) * 1000)

        async def listed() -> list[str]:
            return ["bench"]

        async def stamp() -> int:
            return 1

        bus.subscribe(record, name="bench", workspace_id="bench")
        await bus.start(listed, stamp)
        while bus.listener is not None and bus.listener.connections == 0:
            await asyncio.sleep(0.01)
        argv = ["--data", str(data / "writer"), "--workspace", "bench", "--count", str(events), "--pace", str(PACE_S)]
        if url is not None:
            argv += ["--database-url", url]
        else:
            argv[1] = str(data)  # the same data directory: SQLite's processes share files
        writer = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.support.event_writer", *argv, cwd=REPO, stdout=subprocess.PIPE
        )
        await writer.communicate()
        if writer.returncode != 0:
            raise RuntimeError(f"the writer process failed ({writer.returncode})")
        async with asyncio.timeout(30):
            while len(latencies) < events:
                await asyncio.sleep(0.01)
    return latencies


async def main(events: int) -> None:
    cluster = PostgresCluster.start()
    try:
        with tempfile.TemporaryDirectory(prefix="hbe-") as root, cluster.database() as name:
            sqlite = await delivery(Path(root) / "sqlite", None, events)
            postgresql = await delivery(Path(root) / "pg", cluster.url(name), events)
    finally:
        cluster.stop()
    print(f"event delivery across two processes, {events} events each, written at random intervals up to {PACE_S}s")
    for label, values in (("SQLite, 0.25 s poll", sqlite), ("PostgreSQL, LISTEN/NOTIFY", postgresql)):
        print(
            f"  {label:<26} p50 {statistics.median(values):7.1f} ms   p99 {percentile(values, 99):7.1f} ms   "
            f"max {max(values):7.1f} ms"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=400)
    asyncio.run(main(parser.parse_args().events))
