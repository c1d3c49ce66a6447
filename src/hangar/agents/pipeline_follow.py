"""Agent runs follow the pipeline runs that dispatched them: when a pipeline run is cancelled, the agent runs its
steps dispatched are interrupted (they are the steps' work: a cancelled run's steps stop, wherever their agent runs
are driven)."""

from __future__ import annotations

import asyncio
import logging

from hangar.agents.runner import AgentRunner
from hangar.agents.runs import Run
from hangar.core.event_types import StoredEvent
from hangar.core.events import Subscription
from hangar.pipelines import PipelineRunFinished, run_key

log = logging.getLogger(__name__)


class PipelineFollower:
    def __init__(self, runner: AgentRunner) -> None:
        self._runner = runner
        self._sub: Subscription | None = None

    def start(self) -> None:
        self._sub = self._runner.app.bus.subscribe(
            self._on_pipeline_finished, name="agents-pipeline-runs", types=[PipelineRunFinished.type]
        )

    async def aclose(self) -> None:
        if self._sub is not None:
            await self._runner.app.bus.unsubscribe(self._sub)
            self._sub = None

    async def _on_pipeline_finished(self, event: StoredEvent) -> None:
        if event.payload.get("status") != "cancelled":
            return
        await self.interrupt_for_pipeline(event.workspace_id, str(event.payload["runId"]))

    async def interrupt_for_pipeline(self, workspace_id: str, pipeline_run_id: str) -> list[Run]:
        """Interrupt every running agent run the steps of one pipeline run dispatched; returns them ended."""
        runner = self._runner
        runs = await runner.store.running_for_pipeline(workspace_id, pipeline_run_id)
        ended: list[Run] = []
        for got in await asyncio.gather(
            *(runner.interrupt(workspace_id, r.id, by=run_key(pipeline_run_id)) for r in runs),
            return_exceptions=True,
        ):
            if isinstance(got, Run):
                ended.append(got)
            else:
                log.warning("pipeline run %s was cancelled; one of its agent runs: %s", pipeline_run_id, got)
        return ended
