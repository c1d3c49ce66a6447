"""What the pipelines part runs in the server besides the engine: the event subscription (suspended steps and
event triggers), the event poll, the scheduler (cron triggers, 24-hour timeouts) and, at each of its passes, the
removal of finished runs' directories past their retention (``retention``).

Events are consumed with a per-workspace cursor: at start, the events recorded while the server was down
are handled before live delivery begins; the bus then delivers every event in sequence order, those other
processes record included (within its tail interval), and every scheduler pass also reads what came after the
part's position, so an event trigger or a suspended step never misses one.
"""

from __future__ import annotations

import asyncio
import logging

from hangar.core.context import AppContext
from hangar.core.event_types import StoredEvent
from hangar.core.events import Subscription
from hangar.identity import usable_workspace_ids
from hangar.pipelines.engine import PipelineEngine
from hangar.pipelines.retention import RunRetention
from hangar.pipelines.triggers import Scheduler

log = logging.getLogger(__name__)

CURSOR = "pipelines"
REPLAY_PAGE = 1000
# On PostgreSQL, how often each server looks for running runs whose driver died on another host (or here).
ADOPT_INTERVAL_S = 2.0


class PipelinesRuntime:
    """What the part runs in the server besides the engine: the subscription, the event poll, the scheduler.

    Events arrive through the bus subscription in sequence order per workspace, those another process sharing
    the data directory records (a ``hangar pipeline emit``, say) included. The part handles each event after its
    position once, whichever way it came (the subscription, or the poll every scheduler pass makes as a safety
    net). The position is stored as the consumer cursor: after a restart the events after it are handled again
    (harmless: a suspended step resumes once and a trigger firing starts one run).
    """

    def __init__(self, ctx: AppContext, engine: PipelineEngine) -> None:
        self._ctx = ctx
        self.engine = engine
        self.retention = RunRetention(engine)
        self.scheduler = Scheduler(engine, self.workspaces, on_pass=self.upkeep)
        self._sub: Subscription | None = None
        self._position: dict[str, int] = {}
        self._handling: dict[str, asyncio.Lock] = {}
        self._saved: dict[str, int] = {}  # the position last stored as the cursor
        self._adopting: asyncio.Task[None] | None = None

    async def workspaces(self) -> list[str]:
        return await usable_workspace_ids(self._ctx)

    async def _handle(self, ev: StoredEvent) -> None:
        """Hand ``ev`` to the engine unless it is at or before the workspace's position (seen already)."""
        ws = ev.workspace_id
        if ws not in self._position:
            self._position[ws] = self._saved[ws] = await self._ctx.bus.cursor(ws, CURSOR)
        if ev.seq <= self._position[ws]:
            return
        self._position[ws] = ev.seq
        await self.engine.on_event(ev)

    async def handle_live(self, ev: StoredEvent) -> None:
        async with self._lock(ev.workspace_id):
            await self._handle(ev)

    def _lock(self, ws: str) -> asyncio.Lock:
        lock = self._handling.get(ws)
        if lock is None:
            lock = self._handling[ws] = asyncio.Lock()
        return lock

    async def poll(self, ws: str) -> None:
        """Handle, in sequence order, the stored events after this part's position, and store the position."""
        bus = self._ctx.bus
        async with self._lock(ws):
            if ws not in self._position:
                self._position[ws] = self._saved[ws] = await bus.cursor(ws, CURSOR)
            while page := await bus.replay(ws, after_seq=self._position[ws], limit=REPLAY_PAGE):
                for ev in page:
                    await self._handle(ev)
            if self._position[ws] != self._saved[ws]:
                await bus.set_cursor(ws, CURSOR, self._position[ws])
                self._saved[ws] = self._position[ws]

    async def upkeep(self, ws: str) -> None:
        """What each scheduler pass does for a workspace besides triggers: the event poll, then retention."""
        await self.poll(ws)
        try:
            await self.retention.sweep(ws)
        except Exception:
            log.exception("pipelines: removing expired run directories of %s failed", ws)

    async def start(self) -> None:
        for ws in await self.workspaces():
            try:
                await self.engine.resume_workspace(ws)
                await self.poll(ws)  # what was recorded while the server was down
            except Exception:
                log.exception("pipelines: could not resume workspace %s", ws)
        self.engine.subscribed = True
        self._sub = self._ctx.bus.subscribe(self.handle_live, name="pipelines")
        self.scheduler.start()
        if self.engine.control.in_database:
            self._adopting = asyncio.create_task(self._adopt_loop(), name="pipelines-adopt")

    async def _adopt_loop(self) -> None:
        """Servers sharing a PostgreSQL database take over each other's running runs when a driver dies (its
        lease goes with its connection): one query per workspace every ``ADOPT_INTERVAL_S``, and a lease
        attempt per running run not driven here."""
        while True:
            await asyncio.sleep(ADOPT_INTERVAL_S)
            for ws in await self.workspaces():
                try:
                    await self.engine.adopt(ws)
                except Exception:
                    log.exception("pipelines: could not take over the runs of workspace %s", ws)

    async def stop(self) -> None:
        if self._adopting is not None:
            self._adopting.cancel()
            await asyncio.gather(self._adopting, return_exceptions=True)
            self._adopting = None
        await self.scheduler.aclose()
        if self._sub is not None:
            await self._ctx.bus.unsubscribe(self._sub)
            self._sub = None
        await self.engine.aclose()
