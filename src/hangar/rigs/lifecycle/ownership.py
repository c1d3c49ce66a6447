"""Which process runs each live rig, so that a process which starts (a second server, a worker, a ``hangar``
command that opens every part) never closes a rig another live process runs.

A rig's row says where its life stands; the process that booted it holds a claim on it for as long as it runs it,
through the same run control pipeline and agent runs use (``hangar.core.runcontrol``): a ``flock`` under
``<dataDir>/rigs/.owners/<rigId>/`` on SQLite, a lease in the database on PostgreSQL. The kernel or the database
releases the claim when its holder dies, however it dies. A live row whose claim nobody holds is a rig that died with
its process, and only such a row is closed as a leftover (at start and at every sweep); on PostgreSQL a free lease
must stay free past the lease's lapse first, as for runs, so a blip of the holder's lease connection closes nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from hangar.core.context import AppContext
from hangar.core.runcontrol import RunControl

log = logging.getLogger(__name__)

KIND = "rig"


class RigOwnership:
    """This process's claims on the rigs it runs. ``on_fenced(rig_id)`` is called for a rig whose claim this
    process lost (its lease connection stayed away, or another process took the claim meanwhile): the rig must
    stop, since its row is no longer this process's to keep."""

    def __init__(self, app: AppContext, on_fenced: Callable[[str], Coroutine[Any, Any, None]]) -> None:
        self._on_fenced = on_fenced
        self._fencing: set[asyncio.Task[None]] = set()
        self.control = RunControl(
            app.datadir.root / "rigs" / ".owners",
            kind=KIND,
            on_stop=lambda _rig_id: True,  # rigs are closed through their own ops, never by a stop note
            dbs=app.dbs,
            on_fenced=self._fenced,
        )

    def _fenced(self, rig_id: str) -> None:
        log.warning("rigs: this process lost its claim on rig %s; closing it here", rig_id)
        task = asyncio.get_running_loop().create_task(self._on_fenced(rig_id), name=f"rigs:fenced:{rig_id}")
        self._fencing.add(task)
        task.add_done_callback(self._fencing.discard)

    async def claim(self, ws: str, rig_id: str) -> None:
        """Claim a new rig for this process (before its row is written, so no live row is ever unclaimed by a
        live process)."""
        await self.control.take(rig_id, workspace_id=ws)

    def release(self, rig_id: str) -> None:
        """Give up the claim of a rig this process ran, once its end is stored."""
        self.control.release(rig_id, ended=True)
        if not self.control.in_database:
            self.control.remove(rig_id)

    async def orphaned(self, ws: str, rig_id: str) -> bool:
        """Whether the live row of a rig this process does not run is a leftover: no live process holds its
        claim. When so, this process now holds it; ``release`` it once the row is settled."""
        return await self.control.try_take_abandoned(rig_id, workspace_id=ws) is not None

    async def aclose(self) -> None:
        await self.control.aclose()
