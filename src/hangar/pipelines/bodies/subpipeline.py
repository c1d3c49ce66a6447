"""``pipeline.subPipeline``: runs another template as a child run (``parentPipelineRunId`` set), suspends
until the child is finished, then merges the child's final state under ``outputKey``.

Idempotent across a crash: the child is keyed by (parent run, step, attempt), so the step re-running after a
restart finds the child it already started instead of starting a second one.
"""

from __future__ import annotations

from hangar.pipelines.bodies.spec import ConfigField, body
from hangar.pipelines.step import StepContext
from hangar.pipelines.step_results import StepResult


@body(
    "pipeline.subPipeline",
    summary="Runs another template as a child run and merges the child's final state under outputKey.",
    config=[
        ConfigField(
            "extras.templateId",
            "Template to run as the child (never the calling template)",
            required=True,
            refers="template",
        ),
        ConfigField("inputKeys", "State keys copied into the child's trigger payload"),
        ConfigField("outputKey", "State key receiving the child's final state"),
    ],
    resumes=True,
    honours_dry_run=True,
)
async def sub_pipeline(step: StepContext) -> StepResult:
    if step.resume is not None:
        (child,) = step.resume.tasks
        if not child.succeeded:
            return StepResult.failed(f"child run {child.task_id} ended {child.outcome}")
        return StepResult.ok(output=child.output)
    template_id = str(step.config.extras["templateId"])
    child_id = await step.children.start_child(template_id, step.inputs())
    await step.progress({"childRunId": child_id})
    return StepResult.suspend_until_tasks_complete([child_id])


BODIES = [sub_pipeline]
