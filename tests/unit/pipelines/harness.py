"""An engine built from the core pieces (databases, event bus, clock) in a temporary data directory, with
bodies written by the tests themselves next to those the server's parts contribute."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hangar.config import Settings
from hangar.core.clock import Clock, SystemClock
from hangar.core.confine import HOST, Confinement
from hangar.core.db import Databases
from hangar.core.events import EventBus
from hangar.core.part import Part
from hangar.identity.part import IDENTITY_PART
from hangar.oversight import OVERSIGHT_PART
from hangar.pipelines import template as tpl
from hangar.pipelines.bodies.spec import BodyRegistry, spec_of_body
from hangar.pipelines.engine import PipelineEngine
from hangar.pipelines.events import PIPELINE_EVENTS
from hangar.pipelines.store import PipelineStore
from hangar.pipelines.tables import MIGRATIONS
from hangar.server.context_factory import open_context
from hangar.server.parts import all_parts, step_bodies

WS = "ws1"


@dataclass
class Harness:
    engine: PipelineEngine
    dbs: Databases
    bus: EventBus
    clock: Clock
    root: Path

    async def run(self, raw: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Start a run of ``raw`` and return its snapshot once nothing is live any more."""
        loaded = tpl.load(raw, self.engine.bodies)
        run_id = await self.engine.start_run(WS, loaded.template, **kwargs)
        assert run_id is not None
        await self.engine.settle()
        return await self.engine.snapshot(WS, run_id)

    async def start(self, raw: dict[str, Any], **kwargs: Any) -> str:
        loaded = tpl.load(raw, self.engine.bodies)
        run_id = await self.engine.start_run(WS, loaded.template, **kwargs)
        assert run_id is not None
        return run_id


# The pipelines tables and events, without the part's start (no resumption, no scheduler): tests drive the
# engine they build themselves.
BARE_PIPELINES = Part(name="pipelines", migrations=[MIGRATIONS], events=PIPELINE_EVENTS)


@asynccontextmanager
async def harness(
    root: Path, *, clock: Clock | None = None, bodies: Iterable[Callable[..., Any]] = ()
) -> AsyncIterator[Harness]:
    clock = clock or SystemClock()
    async with open_context(
        Settings(data_dir=root), clock=clock, parts=[OVERSIGHT_PART, IDENTITY_PART, BARE_PIPELINES]
    ) as ctx:
        await ctx.dbs.workspace(WS, create=True)
        # Engine semantics are tested with scripts on the host (trusted host execution); confinement in an
        # enclosure has its own tests.
        ctx.provide(HOST, as_type=Confinement)
        # A test body under a real body's key stands in for it (the approval gate, say, without an orchestration).
        ours = list(bodies)
        keys = {spec_of_body(b).key for b in ours}
        registry = BodyRegistry([*(b for b in step_bodies(all_parts()) if spec_of_body(b).key not in keys), *ours])
        engine = PipelineEngine(
            store=PipelineStore(ctx.dbs.workspace, ctx.dbs.writer),
            bus=ctx.bus,
            clock=clock,
            bodies=registry,
            data_root=root,
            app=ctx,
        )
        try:
            yield Harness(engine, ctx.dbs, ctx.bus, clock, root)
        finally:
            await engine.aclose()


def steps(*specs: dict[str, Any], edges: Iterable[dict[str, Any]] = (), tid: str = "t") -> dict[str, Any]:
    """A template: a trigger named ``start`` followed by ``specs``."""
    return {
        "id": tid,
        "steps": [{"id": "start", "kind": "trigger", "body": "pipeline.trigger"}, *specs],
        "edges": list(edges),
    }


def listen(sid: str, *sources: str, body: str = "pipeline.trigger", **config: Any) -> dict[str, Any]:
    return {"id": sid, "kind": "listen", "body": body, "trigger": {"sourceStepIds": list(sources)}, "config": config}
