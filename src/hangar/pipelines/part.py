"""The pipelines part: tables, ops, events, and at start the engine (resuming every unfinished run), the
event subscription (suspended steps and event triggers) and the scheduler (cron triggers, 24-hour timeouts).

Events are consumed with a per-workspace cursor: at start, the events recorded while the server was down
are handled before live delivery begins, and events other processes record are picked up by every scheduler
pass, so an event trigger or a suspended step never misses one.
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
REPLAY_PAGE = 1000


class PipelinesRuntime:
    """What the part runs in the server besides the engine: the subscription, the event poll, the scheduler.

    In-process events arrive through the bus subscription at once. Events recorded by another process sharing
    the data directory (a ``hangar pipeline emit``, say) never pass through this process's bus, so every
    scheduler pass also reads the events after this part's position in sequence order and handles those the
    subscription has not. The position is stored as the consumer cursor: after a restart the events after it
    are handled again (harmless: a suspended step resumes once and a trigger firing starts one run).
    """

    def __init__(self, ctx: AppContext, engine: PipelineEngine) -> None:
        self._ctx = ctx
        self.engine = engine
        self.scheduler = Scheduler(engine, self.workspaces, on_pass=self.poll)
        self._sub: Subscription | None = None
        self._position: dict[str, int] = {}
        self._live_seen: dict[str, set[int]] = {}

    async def workspaces(self) -> list[str]:
        ids = await self._ctx.identity.list_workspace_ids()
        return [ws for ws in ids if self._ctx.dbs.workspace_exists(ws)]

    async def handle_live(self, ev: StoredEvent) -> None:
        await self.engine.on_event(ev)
        if ev.seq > self._position.get(ev.workspace_id, 0):
            self._live_seen.setdefault(ev.workspace_id, set()).add(ev.seq)

    async def poll(self, ws: str) -> None:
        """Handle, in sequence order, the stored events after this part's position that it has not seen."""
        bus = self._ctx.bus
        start = after = self._position.get(ws)
        if after is None:
            start = after = await bus.cursor(ws, CURSOR)
        seen = self._live_seen.get(ws, set())
        while page := await bus.replay(ws, after_seq=after, limit=REPLAY_PAGE):
            for ev in page:
                if ev.seq in seen:
                    seen.discard(ev.seq)
                else:
                    await self.engine.on_event(ev)
            after = page[-1].seq
        self._position[ws] = after
        if seen:
            self._live_seen[ws] = {q for q in seen if q > after}
        if after != start:
            await bus.set_cursor(ws, CURSOR, after)

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
