"""The backup part: scheduled backups (``schedule``), their settings and their record (``backup_runs``)."""

from __future__ import annotations

import asyncio
import contextlib

from hangar.backup.schedule import SPECS, TICK_S, BackupSchedule
from hangar.backup.tables import MIGRATIONS
from hangar.core.context import AppContext
from hangar.core.part import Part


def make_backup_part(tick: float = TICK_S) -> Part:
    """The part, its schedule checked every ``tick`` seconds (tests pass a short one)."""
    tasks: list[asyncio.Task[None]] = []

    async def start(ctx: AppContext) -> None:
        schedule = ctx.provide(BackupSchedule(ctx, tick))
        if not ctx.bus.following:
            return  # a command run on the data directory, not a server: it schedules nothing
        tasks.append(asyncio.create_task(schedule.run_forever(), name="backup-schedule"))

    async def stop(_ctx: AppContext) -> None:
        while tasks:
            task = tasks.pop()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    return Part(name="backup", migrations=[MIGRATIONS], server_settings=SPECS, start=start, stop=stop)


BACKUP_PART = make_backup_part()
