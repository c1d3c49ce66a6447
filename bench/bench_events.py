"""The core's fast write path: domain events, audit rows and change-counter reads, one at a time.

Each event and each audit row is one transaction of the workspace database (``Databases.writer``); a counter read
is one indexed read (``Databases.stamp``). Prints the median wall and CPU time per operation over ``--repeat`` rounds of
``--count`` operations each, on SQLite (a temporary data directory) or on PostgreSQL (``--postgresql URL``).

    .venv/bin/python bench/bench_events.py [--count 2000] [--repeat 5] [--postgresql URL]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from hangar.config import Settings
from hangar.core.audit import AuditLog
from hangar.core.clock import SystemClock
from hangar.core.datadir import DataDir
from hangar.core.db import Databases
from hangar.core.events import EventBus
from hangar.core.part import kernel_part

WS = "bench"


async def per_op(count: int, repeat: int, op: Callable[[int], Awaitable[object]]) -> tuple[float, float]:
    """The median wall time and this process's median CPU time per operation."""
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        for i in range(count):
            await op(i)
        wall.append((time.perf_counter() - w0) / count)
        cpu.append((time.process_time() - c0) / count)
    return statistics.median(wall), statistics.median(cpu)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--postgresql", default=None, help="a PostgreSQL URL (default: SQLite in a temporary directory)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-events-") as tmp:
        dbs = Databases(
            DataDir(Settings(data_dir=Path(tmp)).data_dir).ensure(),
            kernel_part().migrations,
            postgresql=args.postgresql,
        )
        await dbs.open()
        try:
            await dbs.workspace(WS, create=True)
            clock = SystemClock()
            bus, audit = EventBus(dbs, clock), AuditLog(dbs, clock)
            results = {
                "event append": await per_op(
                    args.count, args.repeat, lambda i: bus.publish_raw(WS, "bench.tick", {"n": i})
                ),
                "audit append": await per_op(
                    args.count, args.repeat, lambda i: audit.append(WS, principal="p", action="a", target=f"t{i % 7}")
                ),
                "counter read": await per_op(args.count, args.repeat, lambda _i: dbs.stamp(WS, "authority")),
            }
            await bus.aclose()
        finally:
            await dbs.aclose()
    print(f"{'operation':<14} {'wall us/op':>11} {'cpu us/op':>10}")
    for name, (wall, cpu) in results.items():
        print(f"{name:<14} {wall * 1e6:>11.1f} {cpu * 1e6:>10.1f}")


if __name__ == "__main__":
    asyncio.run(main())
