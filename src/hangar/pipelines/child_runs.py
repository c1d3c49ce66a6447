"""Sub-pipelines a step starts (``StepContext.children``): one child run per attempt of the step, found again by
its key (``<stepId>#<attempt>``) when the attempt runs again after a crash, never nested deeper than
``MAX_SUBPIPELINE_DEPTH`` and never the calling template itself."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hangar.errors import Refused
from hangar.pipelines.rows import RunRow

if TYPE_CHECKING:
    from hangar.pipelines.engine import PipelineEngine

MAX_SUBPIPELINE_DEPTH = 8


class StepChildren:
    """``ChildRuns`` for one attempt of one step: idempotent, so a re-run after a crash finds the same child."""

    def __init__(self, engine: PipelineEngine, run: RunRow, step_id: str, attempt: int) -> None:
        self._engine = engine
        self._run = run
        self._step_id = step_id
        self._attempt = attempt

    async def start_child(self, template_id: str, payload: Mapping[str, Any]) -> str:
        e, run = self._engine, self._run
        ws = run.workspace_id
        if template_id == run.template_id:
            raise Refused(f"a pipeline cannot call itself ({template_id!r})")
        depth, parent = 1, run.parent_run_id
        while parent is not None:
            depth += 1
            if depth > MAX_SUBPIPELINE_DEPTH:
                raise Refused(f"sub-pipelines nest deeper than {MAX_SUBPIPELINE_DEPTH} levels")
            parent = (await e.store.load_run(ws, parent))[0].parent_run_id
        key = f"{self._step_id}#{self._attempt}"
        existing = await e.store.find_firing(ws, run.id, key)
        if existing is not None:
            return existing
        template = await e.stored_template(ws, template_id)
        child = await e.start_run(
            ws,
            template,
            payload=payload,
            dry_run=run.dry_run,
            trigger_kind="parent",
            trigger_id=run.id,
            trigger_key=key,
            parent_run_id=run.id,
            parent_step_id=self._step_id,
        )
        if child is None:  # started concurrently by an earlier attempt of this same step
            found = await e.store.find_firing(ws, run.id, key)
            assert found is not None
            return found
        return child
