"""The backup part: scheduled backups (``schedule``), their settings and their record (``backup_runs``)."""

from __future__ import annotations

from hangar.backup.schedule import SPECS, TICK_S, BackupSchedule, log
from hangar.backup.tables import MIGRATIONS
from hangar.core.part import Part
from hangar.core.scheduled import scheduled_hooks


def make_backup_part(tick: float = TICK_S) -> Part:
    """The part, its schedule checked every ``tick`` seconds (tests pass a short one)."""
    start, stop = scheduled_hooks("backup-schedule", lambda ctx: ctx.provide(BackupSchedule(ctx, tick)), log)
    return Part(name="backup", migrations=[MIGRATIONS], server_settings=SPECS, start=start, stop=stop)


BACKUP_PART = make_backup_part()
