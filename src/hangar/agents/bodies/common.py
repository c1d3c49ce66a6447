"""What the agent bodies share: finding the space to work in, dispatching, and harvesting finished runs.

An agent step joins a space and never opens one: it works in ``extras.spaceId`` (``{{key}}`` substitution),
else in the space a ``messaging.createSpace`` step published (``pipeline_space_id``). Without either, the step
fails at dispatch, so a fan-out of agent steps always shares one space (and one checkout).

``extras.readOnlyWorktree: true`` makes the step's runs readers of that checkout (a review): a command agent's
program gets the space's folder mounted read-only (every write fails with EROFS; trusted host execution, which
cannot mount it so, fails the run naming the setting), and the runs are offered no op that changes anything.
"""

from __future__ import annotations

from typing import Any

from hangar.agents.runner import AgentRunner
from hangar.agents.runs import Run
from hangar.agents.tools.output_schema import check_schema
from hangar.errors import InvalidArgs, NotFound, Refused
from hangar.pipelines import READ_ONLY_WORKTREE, ConfigField, StepContext, TaskOutcome
from hangar.workspace import SPACE_STATE_KEY, SpaceService, pipeline_author

READ_ONLY_FIELD = ConfigField(
    f"extras.{READ_ONLY_WORKTREE}", "true: the agents read the space's folder and cannot change it (mounted read-only)"
)


def read_only_for(step: StepContext) -> bool:
    """The step's ``extras.readOnlyWorktree`` (absent: false); anything but a boolean is refused, naming it."""
    value = step.config.extras.get(READ_ONLY_WORKTREE, False)
    if not isinstance(value, bool):
        raise InvalidArgs(
            f"step {step.step_id}: extras.{READ_ONLY_WORKTREE} must be true or false, not {type(value).__name__}",
            field=f"extras.{READ_ONLY_WORKTREE}",
        )
    return value


def space_for(step: StepContext) -> str:
    raw = step.config.space_id
    if raw:
        return step.render(raw)
    if step.has(SPACE_STATE_KEY):
        value = step.lookup(SPACE_STATE_KEY)
        if isinstance(value, str) and value:
            return value
    raise Refused(
        f"step {step.step_id} has no space to work in: agent steps join a space and never open one; add a "
        f"messaging.createSpace step before it (or set extras.spaceId)"
    )


def agent_id_for(step: StepContext) -> str:
    raw = step.config.agent_id
    if not raw:
        raise InvalidArgs(f"step {step.step_id} needs agentId", field="agentId")
    return step.render(raw)


def schema_for(step: StepContext, default: dict[str, Any] | None = None) -> dict[str, Any] | None:
    schema = step.config.output_schema or default
    return check_schema(schema) if schema is not None else None


async def earlier_runs(step: StepContext) -> list[Run]:
    """Runs this very attempt of the step already dispatched before the process died (oldest first)."""
    runs = await step.app.service(AgentRunner).store.all(step.workspace_id, dispatched_by=step.attempt_key)
    return sorted(runs, key=lambda r: (r.created_at, r.id))


async def dispatch(
    step: StepContext, *, agent_id: str, space_id: str, prompt: str, schema: dict[str, Any] | None
) -> Run:
    """Dispatch one agent for this attempt of the step, or find the run an interrupted attempt dispatched."""
    earlier = await earlier_runs(step)
    if earlier:
        return earlier[0]
    return await step.app.service(AgentRunner).dispatch(
        step.workspace_id,
        agent_id=agent_id,
        space_id=space_id,
        prompt=prompt,
        dispatched_by=step.attempt_key,
        prompt_author=pipeline_author(step),
        output_schema=schema,
        agent_field="agentId",
        read_only=read_only_for(step),
    )


async def harvest(step: StepContext, task: TaskOutcome, schema: dict[str, Any] | None) -> tuple[Any, str | None]:
    """(output, None) for a run that ended well, else (None, why the step fails).

    With a schema the output is the accepted ``submit_output`` payload; without one it is the agent's last
    message of the run (its answer), or ``None`` when it said nothing.
    """
    run = await step.app.service(AgentRunner).store.get(step.workspace_id, task.task_id)
    if not task.succeeded:
        return None, f"{await _whose(step, run)} ended {run.outcome}: {run.error or 'no reason given'}"
    if schema is not None:
        if not run.has_output:
            return None, f"{await _whose(step, run)} ended without valid output: {run.output_error}"
        return run.output, None
    return await last_reply(step, run), None


async def _whose(step: StepContext, run: Run) -> str:
    """The run named for people, by its agent's name (the run's id is in the step's progress)."""
    try:
        agent = await step.app.service(AgentRunner).agents.get(step.workspace_id, run.agent_id)
    except NotFound:
        return "the run of an agent since deleted"
    return f"the run of agent {agent.name!r}"


async def last_reply(step: StepContext, run: Run) -> str | None:
    msgs = await step.app.service(SpaceService).recent(step.workspace_id, run.space_id, limit=50)
    mine = [m["content"] for m in msgs if m["runId"] == run.id and m["author"]["kind"] == "agent"]
    return mine[-1] if mine else None
