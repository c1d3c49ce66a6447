"""The pipelines part: tables, ops, events, and at start the engine (resuming every unfinished run), the
event subscription (suspended steps and event triggers) and the scheduler (cron triggers, 24-hour timeouts).

Events are consumed with a per-workspace cursor: at start, the events recorded while the server was down
are replayed before live delivery begins, so an event trigger or a suspended step never misses one.
"""

from __future__ import annotations

import logging

from hangar.core.context import AppContext
from hangar.core.events import StoredEvent, Subscription
from hangar.core.part import Part
from hangar.pipelines.engine import PipelineEngine
from hangar.pipelines.events import PIPELINE_EVENTS
from hangar.pipelines.ops import PIPELINE_OPS
from hangar.pipelines.tables import MIGRATIONS
from hangar.pipelines.triggers import Scheduler

log = logging.getLogger(__name__)

CURSOR = "pipelines"


class PipelinesRuntime:
    """What the part runs in the server besides the engine: the subscription and the scheduler."""

    def __init__(self, ctx: AppContext, engine: PipelineEngine) -> None:
        self._ctx = ctx
        self.engine = engine
        self.scheduler = Scheduler(engine, self.workspaces)
        self._sub: Subscription | None = None

    async def workspaces(self) -> list[str]:
        ids = await self._ctx.identity.list_workspace_ids()
        return [ws for ws in ids if self._ctx.dbs.workspace_exists(ws)]

    async def handle(self, ev: StoredEvent) -> None:
        await self.engine.on_event(ev)
        await self._ctx.bus.set_cursor(ev.workspace_id, CURSOR, ev.seq)

    async def start(self) -> None:
        bus = self._ctx.bus
        for ws in await self.workspaces():
            try:
                await self.engine.resume_workspace(ws)
                for ev in await bus.replay(ws, after_seq=await bus.cursor(ws, CURSOR)):
                    await self.handle(ev)
            except Exception:
                log.exception("pipelines: could not resume workspace %s", ws)
        self.engine.subscribed = True
        self._sub = bus.subscribe(self.handle, name="pipelines")
        self.scheduler.start()

    async def stop(self) -> None:
        await self.scheduler.aclose()
        if self._sub is not None:
            await self._ctx.bus.unsubscribe(self._sub)
            self._sub = None
        await self.engine.aclose()


async def _start(ctx: AppContext) -> None:
    engine = ctx.provide(PipelineEngine.from_app(ctx))
    runtime = ctx.provide(PipelinesRuntime(ctx, engine))
    await runtime.start()


async def _stop(ctx: AppContext) -> None:
    runtime = ctx.maybe_service(PipelinesRuntime)
    if runtime is not None:
        await runtime.stop()


PIPELINES_PART = Part(
    name="pipelines",
    ops=PIPELINE_OPS,
    migrations=[MIGRATIONS],
    events=PIPELINE_EVENTS,
    start=_start,
    stop=_stop,
)

# For in-process commands (``hangar pipeline``): the tables, ops and events, but no resumption of other runs,
# no subscription and no scheduler; the command builds and drives its own engine.
PIPELINES_CLI_PART = Part(name="pipelines", ops=PIPELINE_OPS, migrations=[MIGRATIONS], events=PIPELINE_EVENTS)
