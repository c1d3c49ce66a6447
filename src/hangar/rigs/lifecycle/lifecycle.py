"""The life of rigs: records, phases, reuse, parking and waking, reaping, the TTL, the memory budget, port
polling, and the events of the spec. It codes against ``RigBackend`` only (whichever backend the part start
hands it) and keeps the lifecycle rules in ``policy`` (pure), the rows in ``store``. ``manager.RigManager``
adds what callers do with a rig (exec, lanes, take-over, sharing ports).

Phases move like this (``closing`` then ``closed`` for every close reason):

    provisioning ──boot ok──▶ ready ◀──next action── parked
         │                      └──idle one window──▶ ┘
         └──boot failed──▶ failed          (process died underneath any live phase ──▶ failed)

Live state (handles, lanes, in-flight actions, forwards) is in memory; every phase change is written to
``rig_sessions`` so ``rig_list`` and the audit trail survive the process. Rows a previous process left live
are closed with ``serverShutdown`` at start.

``RigLifecycle`` holds the start and stop, finding and listing rigs, and composes the parts that do the work,
each handed the shared ``LiveRigs`` and what else it needs: ``opening.RigOpener`` (reuse, provisioning,
booting), ``upkeep.RigUpkeep`` (the sweep, the memory budget, parking and waking, ports) and
``closing.RigCloser`` (every way a rig ends). Callers open and close through those parts (``opener.open``,
``closer.close``); the sweep, measuring, port polling and the budget, which this runs periodically, stay here.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Awaitable, Callable
from typing import Any

from hangar.core.context import AppContext
from hangar.core.events import Subscription
from hangar.core.principal import Principal
from hangar.errors import NotFound
from hangar.identity import usable_workspace_ids
from hangar.rigs import hooks
from hangar.rigs.backends.base import RigBackend, RigHandle
from hangar.rigs.lifecycle.budget import MEMORY_BUDGET_SETTING, MEMORY_BUDGET_SPEC, MemoryBudget
from hangar.rigs.lifecycle.closing import RigCloser, discard_home
from hangar.rigs.lifecycle.opening import RigOpener, rig_home
from hangar.rigs.lifecycle.upkeep import RigUpkeep
from hangar.rigs.live.rigs import LiveRig, LiveRigs
from hangar.rigs.model import DEFAULT_MEMORY_BUDGET_MB, PORT_POLL_INTERVAL_S, CloseReason, Phase, RigRecord
from hangar.rigs.store import RigStore

log = logging.getLogger(__name__)

SWEEP_INTERVAL_S = 30.0
__all__ = ["MEMORY_BUDGET_SETTING", "MEMORY_BUDGET_SPEC", "RigLifecycle"]


class RigLifecycle:
    def __init__(self, app: AppContext, backend: RigBackend, *, budget_mb: int = DEFAULT_MEMORY_BUDGET_MB) -> None:
        self.app = app
        self.backend = backend
        self.store = RigStore(app.dbs, app.clock)
        self.rigs = LiveRigs(app.clock)
        self.closer = RigCloser(app, self.store, self.rigs)
        self.budget = MemoryBudget(app, self.rigs, self.closer, budget_mb=budget_mb)
        self.upkeep = RigUpkeep(app, self.store, self.rigs, self.closer, self.budget)
        # The bound hook, so a subclass's override (the manager's dev-domain lanes) is the one a boot calls.
        self.opener = RigOpener(
            app, backend, self.store, self.rigs, self.upkeep, self.closer, prepare_ready=self._prepare_ready
        )
        self._tasks: list[asyncio.Task[None]] = []
        self._subs: list[Subscription] = []

    @property
    def budget_mb(self) -> int:
        """The memory budget as last read (``MemoryBudget.current_mb`` reads it afresh)."""
        return self.budget.budget_mb

    @budget_mb.setter
    def budget_mb(self, value: int) -> None:
        """This process's budget where the server setting is not set (tests, and the op after storing it)."""
        self.budget.configured_mb = self.budget.budget_mb = value

    async def _prepare_ready(self, live: LiveRig, handle: RigHandle) -> str | None:
        """What a booted rig needs before it is ``ready`` (the manager adds a browser's dev-domain lanes); returns
        a note for its status detail, or None."""
        return None

    # -- start and stop -----------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.budget.current_mb()
        await self._close_leftovers()
        # Drops spooled by a process that died mid-upload never landed; nothing else reads them.
        await asyncio.to_thread(shutil.rmtree, self.app.datadir.root / "rigs" / "spool", True)
        self._subs.append(
            self.app.bus.subscribe(self.closer.on_ending_event, name="rigs:endings", types=hooks.ENDING_EVENT_TYPES)
        )
        self._tasks.append(asyncio.create_task(self._loop(SWEEP_INTERVAL_S, self.sweep), name="rigs:sweep"))
        self._tasks.append(asyncio.create_task(self._loop(PORT_POLL_INTERVAL_S, self.poll_ports), name="rigs:ports"))

    async def stop(self) -> None:
        self.closer.stopping = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        for sub in self._subs:
            await self.app.bus.unsubscribe(sub)
        self._subs.clear()
        await self.closer.close_all(CloseReason.server_shutdown)
        await self.backend.aclose()

    async def _close_leftovers(self) -> None:
        """Rows a previous process left live describe rigs that died with it."""
        for ws in await usable_workspace_ids(self.app):
            for rec in await self.store.rigs(ws):
                await self.store.update(
                    ws,
                    rec.id,
                    phase=Phase.closed,
                    close_reason=CloseReason.server_shutdown,
                    status_detail="the server stopped before closing it",
                    closed_at=self.app.clock.now(),
                )
                await discard_home(self.app, rig_home(self.app, rec.id))

    async def _loop(self, interval: float, step: Callable[[], Awaitable[None]]) -> None:
        while True:
            await self.app.clock.sleep(interval)
            try:
                await step()
            except Exception:
                log.exception("rigs: periodic %s failed", getattr(step, "__name__", step))

    # -- the periodic work, also run on demand (an op, a test) --------------------------------------------

    async def sweep(self) -> None:
        """Carry out the lifecycle rules now (``RigUpkeep.sweep``)."""
        await self.upkeep.sweep()

    async def measure(self) -> None:
        await self.upkeep.measure()

    async def poll_ports(self) -> None:
        await self.upkeep.poll_ports()

    # -- finding and listing rigs -------------------------------------------------------------------------

    def live(self, ws: str, rig_id: str) -> LiveRig:
        return self.rigs.live(ws, rig_id)

    async def get_live(self, ws: str, rig_id: str) -> LiveRig:
        """The live rig, or a clear error saying why there is none (unknown, closed, failed)."""
        live = self.rigs.find(ws, rig_id)
        if live is not None:
            return live
        rec = await self.store.get(ws, rig_id)
        if rec is None:
            raise NotFound(f"no rig {rig_id} in this workspace")
        reason = f" ({rec.close_reason.value})" if rec.close_reason else ""
        raise NotFound(f"rig {rig_id} is {rec.phase.value}{reason}; open a new one")

    async def log_action(
        self, ws: str, rig_id: str, principal: Principal | str, verb: str, details: dict[str, Any], outcome: str = "ok"
    ) -> int:
        label = principal if isinstance(principal, str) else principal.label
        return await self.store.append_action(ws, rig_id, principal=label, verb=verb, outcome=outcome, details=details)

    async def records(self, ws: str, *, include_closed: bool) -> list[tuple[RigRecord, LiveRig | None]]:
        return [(rec, self.rigs.get(rec.id)) for rec in await self.store.rigs(ws, include_closed=include_closed)]

    async def record(self, ws: str, rig_id: str) -> tuple[RigRecord, LiveRig | None]:
        """One rig's record and, while it lives, its live state; looking does not touch it."""
        rec = await self.store.get(ws, rig_id)
        if rec is None:
            raise NotFound(f"no rig {rig_id} in this workspace")
        return rec, self.rigs.find(ws, rig_id)

    def live_rigs(self) -> list[LiveRig]:
        return self.rigs.all()
