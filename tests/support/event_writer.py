"""Another process writing domain events: the tests' and the benchmark's stand-in for a second server.

``open_bus`` opens what one server process holds for events (its own ``Databases`` and ``EventBus``) on a data
directory or a PostgreSQL URL; run as a module, it appends ``count`` ``Pinged`` events to a workspace, each in a
transaction of its own, each carrying its number and the system-wide monotonic time it was published at (the
benchmark's latency origin):

    python -m tests.support.event_writer --data DIR [--database-url URL] --workspace WS --count N [--pace S]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import ClassVar

from hangar.core.clock import SystemClock
from hangar.core.datadir import DataDir
from hangar.core.db import Databases
from hangar.core.event_types import DomainEvent, EventRegistry
from hangar.core.events import EventBus
from hangar.core.tables import MIGRATIONS


class Pinged(DomainEvent):
    type: ClassVar[str] = "test.pinged"
    n: int
    sent_at: float = 0.0  # time.monotonic() of the writer when it published (one clock for every process)


@contextlib.asynccontextmanager
async def open_bus(data: Path, postgresql: str | None, **intervals: float) -> AsyncIterator[EventBus]:
    """One process's databases and bus (not tailing: call ``start``); closed when the block ends."""
    dbs = Databases(DataDir(data).ensure(), [MIGRATIONS], postgresql=postgresql)
    await dbs.open()
    bus = EventBus(dbs, SystemClock(), EventRegistry([Pinged]), **intervals)
    try:
        yield bus
    finally:
        await bus.aclose()
        await dbs.aclose()


async def append(
    bus: EventBus, workspace_id: str, first: int, count: int, pace: float = 0.0, *, with_records: bool = True
) -> None:
    """``count`` events numbered from ``first``, one transaction each, ``pace`` seconds apart at most (random):
    as a store writes an event with its records (``EventBus.transaction``), or alone through the write path
    (``EventBus.publish``)."""
    for n in range(first, first + count):
        event = Pinged(workspace_id=workspace_id, n=n, sent_at=time.monotonic())
        if not with_records:
            await bus.publish(event)
            continue
        async with bus.transaction(workspace_id) as tx:
            await tx.publish(event)
        if pace:
            await asyncio.sleep(random.uniform(0, pace))


async def _main(args: argparse.Namespace) -> None:
    async with open_bus(Path(args.data), args.database_url) as bus:
        await append(bus, args.workspace, args.first, args.count, args.pace)
    print("done", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--database-url")
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--first", type=int, default=1)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--pace", type=float, default=0.0)
    asyncio.run(_main(parser.parse_args()))
    sys.exit(0)
