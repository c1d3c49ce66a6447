"""``conversation.promptAgent`` and ``flow.forEach``: one agent, one run, one harvested output."""

from __future__ import annotations

from typing import Any

from hangar.agents.bodies.common import READ_ONLY_FIELD, agent_id_for, dispatch, harvest, schema_for, space_for
from hangar.agents.bodies.on_worker import drive_on_worker
from hangar.errors import InvalidArgs
from hangar.pipelines import ConfigField, StepContext, StepResult, body

_AGENT_FIELDS = [
    ConfigField("agentId", "Workspace agent to dispatch ({{key}} substitution)", required=True, refers="agent"),
    ConfigField("prompt", "Prompt with {{key}} substitution", required=True),
    ConfigField("outputKey", "State key for the harvested output"),
    ConfigField("outputSchema", "JSON Schema the agent's submit_output payload must satisfy"),
    ConfigField("label", "Label of the step (signs the prompt in the space)"),
    ConfigField("extras.spaceId", "Space to work in; default: the one messaging.createSpace opened", refers="space"),
    READ_ONLY_FIELD,
]


async def _finish(step: StepContext, schema: dict[str, Any] | None) -> StepResult:
    assert step.resume is not None
    (task,) = step.resume.tasks
    output, error = await harvest(step, task, schema)
    return StepResult.failed(error) if error else StepResult.ok(output=output)


@body(
    "conversation.promptAgent",
    summary="Dispatches an agent into the space with the rendered prompt and harvests its submit_output payload.",
    config=_AGENT_FIELDS,
    resumes=True,
    on_worker=True,
)
async def prompt_agent(step: StepContext) -> StepResult:
    schema = schema_for(step)
    if step.resume is not None:
        return await _finish(step, schema)
    prompt = step.render(step.config.prompt or "")
    if not prompt.strip():
        raise InvalidArgs(f"step {step.step_id} needs a prompt", field="prompt")
    agent_id, space_id = agent_id_for(step), space_for(step)
    if step.on_worker:
        return await drive_on_worker(step, agent_id=agent_id, space_id=space_id, prompt=prompt, schema=schema)
    run = await dispatch(step, agent_id=agent_id, space_id=space_id, prompt=prompt, schema=schema)
    await step.progress({"runId": run.id, "spaceId": run.space_id})
    return StepResult.suspend_until_tasks_complete([run.id])


@body(
    "flow.forEach",
    summary="Renders the prompt per item of a state collection and dispatches the agent once with them all.",
    config=[
        *_AGENT_FIELDS,
        ConfigField("extras.iterableKey", "State key of the collection", required=True),
        ConfigField("extras.itemKey", "Name of the item inside the prompt (default item)"),
    ],
    resumes=True,
    on_worker=True,
)
async def for_each(step: StepContext) -> StepResult:
    schema = schema_for(step)
    if step.resume is not None:
        return await _finish(step, schema)
    key = step.config.extras.get("iterableKey")
    if not isinstance(key, str) or not key:
        raise InvalidArgs(f"step {step.step_id} needs extras.iterableKey", field="extras.iterableKey")
    items = step.lookup(key)
    if isinstance(items, dict):
        items = list(items.values())
    if not isinstance(items, list):
        raise InvalidArgs(f"state {key} is a {type(items).__name__}, not a list", field="extras.iterableKey")
    if not items:
        return StepResult.ok(output=[])
    item_key = str(step.config.extras.get("itemKey") or "item")
    template = step.config.prompt or ""
    prompts = [step.render(template, extra={item_key: item}) for item in items]
    agent_id, space_id, prompt = agent_id_for(step), space_for(step), "\n---\n".join(prompts)
    if step.on_worker:
        extra = {"items": len(items)}
        return await drive_on_worker(
            step, agent_id=agent_id, space_id=space_id, prompt=prompt, schema=schema, progress=extra
        )
    run = await dispatch(step, agent_id=agent_id, space_id=space_id, prompt=prompt, schema=schema)
    await step.progress({"runId": run.id, "spaceId": run.space_id, "items": len(items)})
    return StepResult.suspend_until_tasks_complete([run.id])


BODIES = [prompt_agent, for_each]
