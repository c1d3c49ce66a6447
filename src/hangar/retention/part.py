"""The retention part: retention passes over every database (``schedule``), their settings, their record
(``retention_runs``) and the op that shows them."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

from hangar.core.context import AppContext
from hangar.core.part import Part
from hangar.retention.ops import RETENTION_OPS
from hangar.retention.schedule import PASS_EVERY, SPECS, TICK_S, RetentionSchedule
from hangar.retention.tables import MIGRATIONS


def make_retention_part(tick: float = TICK_S, every: timedelta = PASS_EVERY) -> Part:
    """The part, checking every ``tick`` seconds whether a pass is due (one every ``every``; tests pass short ones)."""
    tasks: list[asyncio.Task[None]] = []

    async def start(ctx: AppContext) -> None:
        schedule = ctx.provide(RetentionSchedule(ctx, tick, every))
        if not ctx.bus.following:
            return  # a command run on the data directory, not a server: it prunes nothing
        tasks.append(asyncio.create_task(schedule.run_forever(), name="retention-schedule"))

    async def stop(_ctx: AppContext) -> None:
        while tasks:
            task = tasks.pop()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    return Part(
        name="retention",
        ops=RETENTION_OPS,
        migrations=[MIGRATIONS],
        server_settings=SPECS,
        start=start,
        stop=stop,
    )


RETENTION_PART = make_retention_part()
