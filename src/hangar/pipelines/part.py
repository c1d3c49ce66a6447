"""The pipelines part: tables, ops, events, its own bodies, and at start the engine (resuming every unfinished
run) and the runtime beside it (``hangar.pipelines.runtime``: the event subscription and the scheduler).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from hangar.core.context import AppContext
from hangar.core.part import Part, StepBody
from hangar.pipelines.bodies import router, shell, subpipeline, trigger
from hangar.pipelines.bodies.spec import BodyRegistry
from hangar.pipelines.engine import PipelineEngine
from hangar.pipelines.events import PIPELINE_EVENTS
from hangar.pipelines.ops import PIPELINE_OPS
from hangar.pipelines.queue_tables import SERVER_MIGRATIONS
from hangar.pipelines.retention import RETENTION_SPEC
from hangar.pipelines.runtime import CURSOR, PipelinesRuntime
from hangar.pipelines.slots import MAX_RUNNING_RUNS_SPEC
from hangar.pipelines.stepqueue import STEPS_HERE_SPEC
from hangar.pipelines.store import PipelineStore
from hangar.pipelines.tables import MIGRATIONS

SERVER_SETTINGS = [MAX_RUNNING_RUNS_SPEC, RETENTION_SPEC, STEPS_HERE_SPEC]
BODIES: list[StepBody] = [*trigger.BODIES, *shell.BODIES, *router.BODIES, *subpipeline.BODIES]


async def _stop(ctx: AppContext) -> None:
    runtime = ctx.maybe_service(PipelinesRuntime)
    if runtime is not None:
        await runtime.stop()


def make_pipelines_part(bodies: Sequence[StepBody] = ()) -> Part:
    """The part, whose engine runs its own bodies and ``bodies``: those of the other parts, handed over by the
    composition (the only place that knows every part)."""
    registry = BodyRegistry([*BODIES, *bodies])

    async def start(ctx: AppContext) -> None:
        engine = ctx.provide(PipelineEngine.from_app(ctx, registry))
        runtime = ctx.provide(PipelinesRuntime(ctx, engine))
        await runtime.start()

    return dataclasses.replace(PIPELINES_CLI_PART, start=start, stop=_stop)


async def _event_floor(ctx: AppContext, workspace_id: str) -> int:
    """What retention keeps for this part (``PipelineStore.needed_events_after``)."""
    return await PipelineStore(ctx.dbs.workspace, ctx.dbs.writer).needed_events_after(workspace_id, CURSOR)


async def _workspace_folders(ctx: AppContext, workspace_id: str) -> list[Path]:
    """The working directories of the workspace's runs (they lie in ``<dataDir>/pipelines/``, not its folder)."""
    return await PipelineStore(ctx.dbs.workspace, ctx.dbs.writer).run_folders(ctx.datadir.root, workspace_id)


# For in-process commands (``hangar pipeline``): the tables, ops, events, bodies and settings, but no resumption of
# other runs, no subscription and no scheduler; the command builds and drives its own engine.
PIPELINES_CLI_PART = Part(
    name="pipelines",
    ops=PIPELINE_OPS,
    migrations=[MIGRATIONS, SERVER_MIGRATIONS],
    events=PIPELINE_EVENTS,
    bodies=BODIES,
    server_settings=SERVER_SETTINGS,
    event_floor=_event_floor,
    workspace_folders=_workspace_folders,
)
