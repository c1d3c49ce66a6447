"""Scheduled backups: a running server backs its data directory up every ``backup.intervalHours`` (off by default)
into ``backup.folder``, keeping the newest ``backup.keep`` backups and removing older ones.

Each pass (every minute) reads the settings afresh, so an admin's change binds at the next pass without a restart.
A backup is due when the folder holds none newer than the interval (its name carries the time it was taken:
``hangar-YYYYMMDDTHHMMSSZ.backup``); servers sharing a data directory take turns on ``<dataDir>/backup.lock`` so
one backup is taken per interval. A backup is written as ``hangar admin backup`` writes one (whole or not at all,
encrypted when the server was started with ``HANGAR_BACKUP_PASSPHRASE``). Every attempt is a row of
``backup_runs`` in the server database, and a failure is also logged as an error, saying why.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from hangar.backup.archive import BackupRefused
from hangar.backup.passphrase import read_passphrase
from hangar.backup.pg_source import source_for
from hangar.backup.tables import backup_runs
from hangar.backup.take import Taken, take_backup
from hangar.core.context import AppContext
from hangar.core.ids import new_id
from hangar.core.settings import SettingSpec, strict_bool, strict_int
from hangar.core.turns import taking_turn
from hangar.errors import InvalidArgs

log = logging.getLogger("hangar.backup")

INTERVAL_SETTING = "backup.intervalHours"
KEEP_SETTING = "backup.keep"
FOLDER_SETTING = "backup.folder"
WITHOUT_FILES_SETTING = "backup.withoutFiles"
MAX_INTERVAL_HOURS = 8760
DEFAULT_KEEP = 7
MAX_KEEP = 1000
MAX_FOLDER = 4096
TICK_S = 60.0
_NAME = re.compile(r"^hangar-(\d{8}T\d{6}Z)\.backup$")
_STAMP = "%Y%m%dT%H%M%SZ"


def _folder(value: Any) -> str:
    if value == "":
        return ""  # back to the default
    if not isinstance(value, str) or not value.startswith("/") or len(value) > MAX_FOLDER or "\0" in value:
        raise InvalidArgs(
            f"{FOLDER_SETTING} must be an absolute folder path of at most {MAX_FOLDER} characters", field=FOLDER_SETTING
        )
    return value


SPECS = [
    SettingSpec(
        INTERVAL_SETTING,
        f"Hours between scheduled backups (0, the default: none; at most {MAX_INTERVAL_HOURS}).",
        strict_int(INTERVAL_SETTING, 0, MAX_INTERVAL_HOURS),
    ),
    SettingSpec(
        KEEP_SETTING,
        f"How many scheduled backups are kept; older ones are removed (default {DEFAULT_KEEP}, at most {MAX_KEEP}).",
        strict_int(KEEP_SETTING, 1, MAX_KEEP),
    ),
    SettingSpec(
        FOLDER_SETTING,
        "The folder scheduled backups are written to (default: <dataDir>-backups beside the data directory).",
        _folder,
    ),
    SettingSpec(
        WITHOUT_FILES_SETTING,
        "Scheduled backups leave out repositories, spaces and worktrees (default false).",
        strict_bool(WITHOUT_FILES_SETTING),
    ),
]


@dataclass(frozen=True)
class Plan:
    interval: timedelta
    keep: int
    folder: Path
    without_files: bool


def backups_in(folder: Path) -> list[tuple[datetime, Path]]:
    """The scheduled backups in ``folder``, oldest first."""
    found: list[tuple[datetime, Path]] = []
    with contextlib.suppress(FileNotFoundError, NotADirectoryError), os.scandir(folder) as entries:
        for entry in entries:
            match = _NAME.match(entry.name)
            if match and entry.is_file(follow_symlinks=False):
                found.append((datetime.strptime(match.group(1), _STAMP).replace(tzinfo=None), Path(entry.path)))
    return sorted(found)


class BackupSchedule:
    def __init__(self, app: AppContext, tick: float = TICK_S) -> None:
        self.app = app
        self.tick = tick

    async def _setting(self, key: str) -> Any:
        from hangar.identity import IdentityService

        return await self.app.service(IdentityService).get_setting(key)

    async def plan(self) -> Plan | None:
        hours = await self._setting(INTERVAL_SETTING)
        if not isinstance(hours, int) or hours <= 0:
            return None
        keep = await self._setting(KEEP_SETTING)
        folder = await self._setting(FOLDER_SETTING)
        root = self.app.datadir.root
        return Plan(
            interval=timedelta(hours=hours),
            keep=keep if isinstance(keep, int) and keep > 0 else DEFAULT_KEEP,
            folder=Path(folder) if isinstance(folder, str) and folder else root.parent / f"{root.name}-backups",
            without_files=await self._setting(WITHOUT_FILES_SETTING) is True,
        )

    async def pass_once(self) -> Path | None:
        """Take a backup if one is due; the file written, or None."""
        plan = await self.plan()
        if plan is None:
            return None
        now = _utc_naive(self.app)
        with taking_turn(self.app.datadir.root / "backup.lock") as mine:
            if not mine:
                return None
            held = await asyncio.to_thread(backups_in, plan.folder)
            if held and now - held[-1][0] < plan.interval:
                return None
            target = plan.folder / f"hangar-{now.strftime(_STAMP)}.backup"
            started = self.app.clock.now()
            try:
                taken = await asyncio.to_thread(self._take, plan, target)
            except (BackupRefused, OSError) as exc:
                error = exc.message if isinstance(exc, BackupRefused) else f"{target}: {exc.strerror or exc}"
                log.error("backup: the scheduled backup to %s failed: %s", target, error)
                await self._record(started, "failed", target, None, error)
                return None
            await self._record(started, "ok", target, taken.size, None)
            log.info("backup: wrote %s (%d bytes, %d items)", target, taken.size, taken.items)
            await asyncio.to_thread(_prune, plan)
            return target

    def _take(self, plan: Plan, target: Path) -> Taken:
        plan.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return take_backup(
            source_for(self.app.datadir, self.app.dbs.postgresql_url, bindir=self.app.settings.pg_bindir),
            target,
            self.app.datadir.root,
            passphrase=read_passphrase(None, self.app.settings.backup_passphrase),
            without_files=plan.without_files,
        )

    async def _record(self, started: datetime, outcome: str, target: Path, size: int | None, error: str | None) -> None:
        row = {
            "id": new_id(),
            "started_at": started,
            "finished_at": self.app.clock.now(),
            "outcome": outcome,
            "file": str(target),
            "size": size,
            "error": error,
        }
        async with self.app.dbs.server.begin() as conn:
            await conn.execute(sa.insert(backup_runs).values(**row))


def _utc_naive(app: AppContext) -> datetime:
    """Now on the app's clock, in UTC without a zone, to the second (as backup names carry it)."""
    now = app.clock.now()
    if now.tzinfo is not None:
        now = now.astimezone(UTC)
    return now.replace(tzinfo=None, microsecond=0)


def _prune(plan: Plan) -> None:
    """Remove the oldest scheduled backups beyond ``plan.keep``."""
    held = backups_in(plan.folder)
    for _when, path in held[: max(0, len(held) - plan.keep)]:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            log.info("backup: removed %s (more than %d kept)", path, plan.keep)
