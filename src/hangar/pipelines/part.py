"""The pipelines part: tables, ops, events, and at start the engine (resuming every unfinished run) and the
runtime beside it (``hangar.pipelines.runtime``: the event subscription and the scheduler).
"""

from __future__ import annotations

from hangar.core.context import AppContext
from hangar.core.part import Part
from hangar.pipelines.engine import PipelineEngine
from hangar.pipelines.events import PIPELINE_EVENTS
from hangar.pipelines.ops import PIPELINE_OPS
from hangar.pipelines.runtime import PipelinesRuntime
from hangar.pipelines.tables import MIGRATIONS


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
