"""``pipeline.trigger``: the no-op body of the trigger node."""

from __future__ import annotations

from hangar.pipelines.bodies.spec import body
from hangar.pipelines.step import StepContext
from hangar.pipelines.step_results import StepResult


@body(
    "pipeline.trigger",
    summary="No-op body of the trigger node; completes at once. No configuration.",
    honours_dry_run=True,
)
async def pipeline_trigger(step: StepContext) -> StepResult:
    return StepResult.ok()


BODIES = [pipeline_trigger]
