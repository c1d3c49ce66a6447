"""Finished runs' working directories go after ``pipelines.runRetentionDays`` (a server setting, default 7 days,
read afresh at each pass).

The scheduler's periodic pass (``runtime.PipelinesRuntime``) sweeps each workspace: it lists
``<dataDir>/pipelines/`` (only directories not yet removed are there, so the listing stays short), asks the
workspace which of those runs finished before the cutoff on the injectable clock, and removes each one's working
directory and control directory. The working directory goes with its disk (``hangar.core.disks``: the mount is
detached and the image deleted, so nothing the run's scripts planted is walked); a directory without one (made
before disk quotas, or by trusted host execution) is removed from descriptors without following any symlink in it.
The run's record, its state and its steps stay.
"""

from __future__ import annotations

import asyncio
import logging
import os
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from hangar.core.disks import ScopeDisks
from hangar.core.settings import SettingSpec, strict_int
from hangar.identity import IdentityService
from hangar.pipelines import layout

if TYPE_CHECKING:
    from hangar.pipelines.engine import PipelineEngine

log = logging.getLogger(__name__)

RETENTION_SETTING = "pipelines.runRetentionDays"
DEFAULT_RETENTION_DAYS = 7
RETENTION_SPEC = SettingSpec(
    RETENTION_SETTING,
    "How many days a finished pipeline run's working directory is kept before it is removed.",
    strict_int(RETENTION_SETTING, 1, 36500),
)


class RunRetention:
    def __init__(self, engine: PipelineEngine) -> None:
        self.engine = engine

    async def days(self) -> int:
        app = self.engine.app
        identity = app.maybe_service(IdentityService) if app is not None else None
        value = await identity.get_setting(RETENTION_SETTING) if identity is not None else None
        return value if isinstance(value, int) and value > 0 else DEFAULT_RETENTION_DAYS

    def _disks(self) -> ScopeDisks:
        app = self.engine.app
        provided = app.maybe_service(ScopeDisks) if app is not None else None
        return provided or ScopeDisks(self.engine.data_root / "disks")

    async def sweep(self, ws: str) -> list[str]:
        """Remove the directories of ``ws``'s runs that finished more than the retention period ago; returns their
        ids."""
        root = self.engine.data_root / "pipelines"
        names = await asyncio.to_thread(_run_dirs, root)
        if not names:
            return []
        cutoff = self.engine.clock.now() - timedelta(days=await self.days())
        doomed = [
            r for r in await self.engine.store.finished_before(ws, names, cutoff) if r not in self.engine.live_runs
        ]
        disks = self._disks()
        for run_id in doomed:
            await disks.remove(layout.run_dir(self.engine.data_root, run_id))
            await asyncio.to_thread(self.engine.control.remove, run_id)
        if doomed:
            log.info("pipelines: removed the directories of %d finished runs of %s", len(doomed), ws)
        return doomed


def _run_dirs(root: Path) -> list[str]:
    """The run ids that have a directory under ``root`` (the control directory and stray files aside)."""
    try:
        with os.scandir(root) as listing:
            return [e.name for e in listing if e.name != layout.CONTROL_DIR and e.is_dir(follow_symlinks=False)]
    except FileNotFoundError:
        return []
