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
CURSOR_SAVE_SECONDS = 5.0
REPLAY_PAGE = 1000


class PipelinesRuntime:
    """What the part runs in the server besides the engine: the subscription and the scheduler."""

    def __init__(self, ctx: AppContext, engine: PipelineEngine) -> None:
        self._ctx = ctx
        self.engine = engine
        self.scheduler = Scheduler(engine, self.workspaces)
        self._sub: Subscription | None = None
        self._seen: dict[str, int] = {}
        self._saved_at = ctx.clock.monotonic()

    async def workspaces(self) -> list[str]:
        ids = await self._ctx.identity.list_workspace_ids()
        return [ws for ws in ids if self._ctx.dbs.workspace_exists(ws)]

    async def handle(self, ev: StoredEvent) -> None:
        await self.engine.on_event(ev)
        self._seen[ev.workspace_id] = max(ev.seq, self._seen.get(ev.workspace_id, 0))
        # The cursor is stored lazily: handling an event twice (after a crash) is harmless, since a suspended
        # step resumes once and a trigger firing starts one run, and every domain event of the server passes
        # here, so a write per event would be wasted.
        now = self._ctx.clock.monotonic()
        if now - self._saved_at >= CURSOR_SAVE_SECONDS:
            await self.save_cursors()

    async def save_cursors(self) -> None:
        self._saved_at = self._ctx.clock.monotonic()
        pending, self._seen = self._seen, {}
        for ws, seq in pending.items():
            await self._ctx.bus.set_cursor(ws, CURSOR, seq)

    async def start(self) -> None:
        bus = self._ctx.bus
        for ws in await self.workspaces():
            try:
                await self.engine.resume_workspace(ws)
                after = await bus.cursor(ws, CURSOR)
                while page := await bus.replay(ws, after_seq=after, limit=REPLAY_PAGE):
                    for ev in page:
                        await self.handle(ev)
                    after = page[-1].seq
                await self.save_cursors()
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
        await self.save_cursors()
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
