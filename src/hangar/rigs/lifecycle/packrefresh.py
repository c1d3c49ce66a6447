"""Checking the image packs against their archives on a schedule: every ``rigs.packRefreshHours`` (a server
setting; without it the ``--pack-refresh-hours`` this process was started with, 24 by default; 0: never, at most
8760) each ready pack is compared with the release dates of the suites it was built from, and a stale one is built
again in the background while the old one keeps serving (``images.refresh``, ``images.versions``).

Each pass (every minute) reads the setting afresh, so a change binds at the next pass without a restart. A pack is
due when its last check (``<name>.refresh.json`` beside it, shared by every process using the packs) is older than
the interval. Processes sharing the packs (servers on one data directory, or data directories sharing a packs
directory) take turns on ``<packs>/refresh.lock`` as scheduled backups do (``hangar.core.turns``), so one of them
checks per pass. Every pass, checks on or off, also removes the old versions of packs that no rig boots from any
more (each removal takes the version's lock, so passes of several processes never collide).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from hangar.config import MAX_PACK_REFRESH_HOURS
from hangar.core.context import AppContext
from hangar.core.settings import SettingSpec, strict_int
from hangar.core.turns import taking_turn
from hangar.identity import IdentityService
from hangar.rigs.backends.base import RigBackend
from hangar.rigs.images.refresh import Record

log = logging.getLogger(__name__)

REFRESH_SETTING = "rigs.packRefreshHours"
TICK_S = 60.0
REFRESH_SPEC = SettingSpec(
    REFRESH_SETTING,
    f"Hours between checks of the image packs against their Debian archives (a stale pack is built again in the "
    f"background; 0: never; at most {MAX_PACK_REFRESH_HOURS}; default 24).",
    strict_int(REFRESH_SETTING, 0, MAX_PACK_REFRESH_HOURS),
)


class PackRefresh:
    def __init__(self, app: AppContext, backend: RigBackend, tick: float = TICK_S) -> None:
        self.app = app
        self.backend = backend
        self.tick = tick

    async def interval_hours(self) -> int:
        stored = await self.app.service(IdentityService).get_setting(REFRESH_SETTING)
        return (
            stored if isinstance(stored, int) and not isinstance(stored, bool) else self.app.settings.pack_refresh_hours
        )

    async def run_forever(self) -> None:
        while True:
            try:
                await self.pass_once()
            except Exception:
                log.exception("rigs: the scheduled check of the image packs failed")
            await asyncio.sleep(self.tick)

    async def pass_once(self, *, now: bool = False) -> bool:
        """Check the packs that are due (every ready pack when ``now``); whether this process took the turn. Old
        versions no rig boots from any more are removed at every pass, checks on or off."""
        packs_root = getattr(self.backend, "packs_root", None)
        if packs_root is None or self.backend.unavailable_reason() is not None:
            return False  # no packs on this host's backend, or no rigs can run here
        hours = await self.interval_hours()
        if hours <= 0 and not now:
            await self.backend.sweep_packs()
            return False
        packs_root.mkdir(parents=True, exist_ok=True)
        interval = timedelta(hours=hours)
        wall = datetime.now(UTC)

        def due(record: Record | None) -> bool:
            return now or record is None or record.checked_at is None or wall - record.checked_at >= interval

        with taking_turn(packs_root / "refresh.lock") as mine:
            if not mine:
                return False
            await self.backend.refresh_packs(due)
            return True
