"""Bodies the engine tests run next to the real ones: each does one observable thing."""

from __future__ import annotations

import asyncio
from typing import Any

from hangar.pipelines import StepContext, StepResult, TaskFinished, body

# Gates let a test hold bodies open so parallel branches really overlap.
GATES: dict[str, asyncio.Event] = {}
CALLS: list[str] = []


@body("test.value", summary="Outputs extras.value.")
async def value(step: StepContext) -> StepResult:
    CALLS.append(step.step_id)
    gate = step.config.extras.get("gate")
    if gate:
        await GATES.setdefault(gate, asyncio.Event()).wait()
    return StepResult.ok(step.config.extras.get("state"), output=step.config.extras.get("value"))


@body("test.flaky", summary="Fails until attempt extras.failTimes + 1.")
async def flaky(step: StepContext) -> StepResult:
    if step.attempt <= int(step.config.extras.get("failTimes", 0)):
        return StepResult.failed(f"attempt {step.attempt} failed")
    return StepResult.ok(output=step.attempt)


@body("test.raise", summary="Raises.")
async def raiser(step: StepContext) -> StepResult:
    raise RuntimeError("kaboom")


@body("test.sleep", summary="Sleeps extras.seconds on the engine clock.")
async def sleeper(step: StepContext) -> StepResult:
    await step.clock.sleep(float(step.config.extras["seconds"]))
    return StepResult.ok(output="woke")


@body("test.waitEvent", summary="Suspends until extras.eventType (optionally publishing it first).")
async def wait_event(step: StepContext) -> StepResult:
    ev = step.config.extras["eventType"]
    early = step.config.extras.get("publishFirst")
    if early is not None:
        await step.app.bus.publish_raw(step.workspace_id, ev, early)
    return StepResult.suspend_until_event(ev, {"waiting": step.step_id}, match=step.config.extras.get("match"))


# Stands in for the partial-approval gate (the one body a template may give extras.awaitApproval: no timeout) in
# harnesses that leave the real one out (``harness(bodies=[..., approval_wait])``); not in ``BODIES``, which
# compositions add to every part's bodies.
@body("orchestration.awaitApproval", summary="Suspends until extras.eventType, exempt from the 24-hour timeout.")
async def approval_wait(step: StepContext) -> StepResult:
    return StepResult.suspend_until_event(step.config.extras["eventType"])


@body("test.waitTasks", summary="Suspends until extras.taskIds finish (optionally finishing some first).")
async def wait_tasks(step: StepContext) -> StepResult:
    for tid in step.config.extras.get("finishFirst", []):
        await step.app.bus.publish(
            TaskFinished(workspace_id=step.workspace_id, task_id=tid, outcome="completed", output={"t": tid})
        )
    return StepResult.suspend_until_tasks_complete(step.config.extras["taskIds"])


@body("test.harvest", summary="Suspends on a task, then harvests its output itself.", resumes=True)
async def harvest(step: StepContext) -> StepResult:
    if step.resume is None:
        return StepResult.suspend_until_tasks_complete([step.config.extras["taskId"]])
    (task,) = step.resume.tasks
    return StepResult.ok(output={"harvested": task.output, "outcome": task.outcome})


@body("test.slowHarvest", summary="Dispatches once, then harvests slowly (held by a gate).", resumes=True)
async def slow_harvest(step: StepContext) -> StepResult:
    if step.resume is None:
        CALLS.append("dispatch")
        return StepResult.suspend_until_tasks_complete([step.config.extras["taskId"]])
    CALLS.append("harvest")
    await GATES.setdefault("harvest", asyncio.Event()).wait()
    (task,) = step.resume.tasks
    return StepResult.ok(output=task.output)


@body("test.terminal", summary="Ends the run.")
async def terminal(step: StepContext) -> StepResult:
    return StepResult.terminal({"ended_by": step.step_id})


@body("test.progress", summary="Reports progress.")
async def progress(step: StepContext) -> StepResult:
    await step.progress({"done": 1, "of": 2})
    return StepResult.ok()


@body("test.bad", summary="Returns something that is not a StepResult.")
async def bad(step: StepContext) -> Any:
    return {"not": "a result"}


TEST_BODIES = [
    value,
    flaky,
    raiser,
    sleeper,
    wait_event,
    wait_tasks,
    harvest,
    slow_harvest,
    terminal,
    progress,
    bad,
]
BODIES = TEST_BODIES
