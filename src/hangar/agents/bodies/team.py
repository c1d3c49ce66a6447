"""``team.dispatch`` and ``approval.gate``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hangar.agents.bodies.common import (
    READ_ONLY_FIELD,
    agent_id_for,
    dispatch,
    earlier_runs,
    harvest,
    read_only_for,
    schema_for,
    space_for,
)
from hangar.agents.bodies.on_worker import runs_on_worker
from hangar.agents.events import RunFinished
from hangar.agents.runner import AgentRunner
from hangar.agents.teams import TeamService, check_dispatch_mode
from hangar.agents.tools.output_schema import violation
from hangar.errors import InvalidArgs
from hangar.pipelines import APPROVAL_PROGRESS_KEY, ConfigField, StepContext, StepResult, TaskOutcome, body
from hangar.workspace import pipeline_author


def _member_schema(step: StepContext) -> dict[str, Any] | None:
    """``outputSchema`` describes the harvested list; each member submits an item of it."""
    schema = schema_for(step)
    if schema is None:
        return None
    items = schema.get("items")
    if schema.get("type") != "array" or not isinstance(items, dict):
        raise InvalidArgs(
            f"step {step.step_id}: team.dispatch outputSchema describes the list of member outputs, so it must "
            "be an array schema whose items each member's submit_output satisfies",
            field="outputSchema",
        )
    return items


@body(
    "team.dispatch",
    summary="Dispatches a team (every member, or only the leader in manager mode) and harvests their outputs.",
    config=[
        ConfigField("teamId", "Team to dispatch ({{key}} substitution)", required=True, refers="team"),
        ConfigField("prompt", "Prompt with {{key}} substitution", required=True),
        ConfigField("dispatchMode", "allParallel (default: the team's own) or manager"),
        ConfigField("outputKey", "State key for the list of member outputs, in member order"),
        ConfigField("outputSchema", "Array schema of that list; each member's submit_output must match its items"),
        ConfigField("label", "Label of the step"),
        ConfigField(
            "extras.spaceId", "Space to work in; default: the one messaging.createSpace opened", refers="space"
        ),
        READ_ONLY_FIELD,
    ],
    resumes=True,
    on_worker=True,
)
async def team_dispatch(step: StepContext) -> StepResult:
    schema = _member_schema(step)
    if step.resume is not None:
        return await _harvest_all(step, step.resume.tasks, schema)
    raw_team = step.config.team_id
    if not raw_team:
        raise InvalidArgs(f"step {step.step_id} needs teamId", field="teamId")
    team = await step.app.service(TeamService).get(step.workspace_id, step.render(raw_team))
    mode = check_dispatch_mode(step.config.dispatch_mode) if step.config.dispatch_mode else team.dispatch_mode
    targets = team.dispatch_targets(mode)
    prompt = step.render(step.config.prompt or "")
    if not prompt.strip():
        raise InvalidArgs(f"step {step.step_id} needs a prompt", field="prompt")
    space_id = space_for(step)
    if step.on_worker:
        tasks = await runs_on_worker(
            step,
            agent_ids=targets,
            space_id=space_id,
            prompt=prompt,
            schema=schema,
            agent_field="teamId",
            progress=lambda runs: _progress([r.id for r in runs], space_id, mode, targets),
        )
        return await _harvest_all(step, tasks, schema)
    runs = await earlier_runs(step) or await step.app.service(AgentRunner).dispatch_many(
        step.workspace_id,
        agent_ids=targets,
        space_id=space_id,
        prompt=prompt,
        dispatched_by=step.attempt_key,
        prompt_author=pipeline_author(step),
        output_schema=schema,
        agent_field="teamId",
        read_only=read_only_for(step),
    )
    run_ids = [r.id for r in runs]
    await step.progress(_progress(run_ids, space_id, mode, targets))
    return StepResult.suspend_until_tasks_complete(run_ids)


def _progress(run_ids: list[str], space_id: str, mode: str, targets: list[str]) -> dict[str, Any]:
    return {"runIds": run_ids, "spaceId": space_id, "dispatchMode": mode, "agentIds": targets}


async def _harvest_all(step: StepContext, tasks: Sequence[TaskOutcome], schema: dict[str, Any] | None) -> StepResult:
    """The members' outputs in member order, or every failure."""
    outputs: list[Any] = []
    failures: list[str] = []
    for task in tasks:
        output, error = await harvest(step, task, schema)
        if error:
            failures.append(error)
        outputs.append(output)
    if failures:
        return StepResult.failed("; ".join(failures))
    return StepResult.ok(output=outputs)


GATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "enum": ["approved", "rejected"]},
        "reason": {"type": "string"},
    },
    "required": ["decision", "reason"],
}
GATE_PROMPT = (
    "Review the work in this conversation and decide whether it may proceed. Call submit_output with "
    "decision `approved` or `rejected` and a short reason."
)


@body(
    "approval.gate",
    summary="Asks an approver agent for a {decision, reason} through submit_output; a rejection fails the step.",
    config=[
        ConfigField("agentId", "The approver agent", required=True, refers="agent"),
        ConfigField("prompt", "Gate prompt ({{key}} substitution); a default asks for approved or rejected"),
        ConfigField("outputKey", "State key for {decision, reason}"),
        ConfigField("outputSchema", "Default: decision approved|rejected plus reason"),
        ConfigField("label", "Label of the step"),
        ConfigField(
            "extras.spaceId", "Space to review in; default: the one messaging.createSpace opened", refers="space"
        ),
        READ_ONLY_FIELD,
    ],
    resumes=True,
)
async def approval_gate(step: StepContext) -> StepResult:
    """The approver decides with ``submit_output``. When its first run ends without a decision (it answered, say,
    that a person must decide), the gate waits on: a later run of the approver in the same space that submits an
    output matching the gate's schema decides it (a person tells the approver, and the approver submits)."""
    schema = schema_for(step, GATE_SCHEMA)
    assert schema is not None  # the default is there
    if step.resume is not None and step.resume.event is not None:
        run = await step.app.service(AgentRunner).store.get(step.workspace_id, str(step.resume.event.payload["runId"]))
        if not run.has_output or violation(schema, run.output) is not None:
            return _await_decision(step, run.agent_id, run.space_id)
        return _decided(run.output)
    if step.resume is not None:
        (task,) = step.resume.tasks
        run = await step.app.service(AgentRunner).store.get(step.workspace_id, task.task_id)
        if task.succeeded and not run.has_output:
            return _await_decision(step, run.agent_id, run.space_id)
        output, error = await harvest(step, task, schema)
        if error:
            return StepResult.failed(error)
        return _decided(output)
    prompt = step.render(step.config.prompt) if step.config.prompt else GATE_PROMPT
    run = await dispatch(step, agent_id=agent_id_for(step), space_id=space_for(step), prompt=prompt, schema=schema)
    approval = {"agentId": run.agent_id, "spaceId": run.space_id, "outputSchema": schema}
    await step.progress({"runId": run.id, "spaceId": run.space_id, APPROVAL_PROGRESS_KEY: approval})
    return StepResult.suspend_until_tasks_complete([run.id])


def _decided(output: Any) -> StepResult:
    if isinstance(output, dict) and output.get("decision") == "rejected":
        return StepResult.failed(f"the approver rejected: {output.get('reason') or 'no reason given'}")
    return StepResult.ok(output=output)


def _await_decision(step: StepContext, agent_id: str, space_id: str) -> StepResult:
    """Wait for a run of the approver in the gate's space that ends with an accepted ``submit_output``."""
    match = {"agentId": agent_id, "spaceId": space_id, "hasOutput": True}
    return StepResult.suspend_until_event(RunFinished.type, match=match)


BODIES = [team_dispatch, approval_gate]
