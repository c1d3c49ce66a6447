"""Agent steps on a ``hangar worker``: the step's agent run (a team's: each member's run) is driven within the
step's try, under its claim.

In a server, an agent step dispatches a run, suspends, and is resumed with the run's outcome when the run ends
(``TaskFinished``). A worker cannot leave a run behind when its claim ends, so there the body drives the run to
its end inside the try (the model's calls and its tools, or a command agent's confined program, all on the
worker's host) and returns the harvested output at once. Everything the run writes (its row, its turn events,
its messages) goes to the workspace's records in the database as it would from a server, so every server, and the
web client through them, sees the run as if a server drove it.

Tries and take-over: the run is keyed by the step's ``attempt_key`` (``dispatched_by``), so every try of one
attempt finds it. A try that finds the run over harvests it (a worker died after the run's end was recorded and
before the step's result was). A try that finds it ``running`` (the earlier try's worker died or was fenced) takes
its driver lease over and drives it again: the turn its predecessor left open is closed, and a command agent is
run again with ``HANGAR_ATTEMPT_KEY`` (this try) and ``HANGAR_EARLIER_ATTEMPTS`` (the earlier tries' keys) in its
environment; a run whose reply is already in the space is not run again (its end is recorded with that reply, and
its output harvested from it), so a reply is never posted twice. Servers leave such a run alone while the step's
attempt is queued or claimed (``hangar.pipelines.attempts_in_queue``); a fenced claim stops the program at once
and records nothing of the run's end (``AgentRunner.abandon``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from hangar.agents import events as ev
from hangar.agents.adapters.base import Adapter, RunIO, RunRequest, RunResult
from hangar.agents.adapters.command import NOTHING, harvest_output
from hangar.agents.bodies.common import earlier_runs, harvest, last_reply, read_only_for
from hangar.agents.config import OpenAIAdapter
from hangar.agents.live_run import LiveRun
from hangar.agents.run_events import stored_run_events
from hangar.agents.runner import AgentRunner
from hangar.agents.runs import Run, RunStatus
from hangar.errors import NotFound, Unavailable
from hangar.identity import IdentityService
from hangar.pipelines import StepContext, StepResult, TaskOutcome
from hangar.workspace import pipeline_author

TAKE_OVER_WAIT_S = 30.0  # how long a try waits for the earlier driver of its run to let go (a fenced worker)
TAKE_OVER_POLL_S = 0.5


class AlreadyReplied(Adapter):
    """Ends a run taken over whose reply an earlier driver posted before it died: nothing runs again, and a
    requested output is harvested from that reply (as from a command's stdout)."""

    def __init__(self, reply: str) -> None:
        self._reply = reply

    async def run(self, request: RunRequest, io: RunIO) -> RunResult:
        if io.output.schema is not None and (payload := harvest_output(None, self._reply)) is not NOTHING:
            io.output.submit(payload)
        return RunResult(ev.RunOutcome.ok)


def attempt_env(step: StepContext) -> dict[str, str]:
    """What a command agent's program is told of the try (as a shell step's script is)."""
    return {
        "HANGAR_ATTEMPT_KEY": step.try_key,
        "HANGAR_EARLIER_ATTEMPTS": " ".join(str(t["key"]) for t in step.earlier_tries),
    }


async def drive_on_worker(
    step: StepContext,
    *,
    agent_id: str,
    space_id: str,
    prompt: str,
    schema: dict[str, Any] | None,
    progress: Mapping[str, Any] | None = None,
) -> StepResult:
    """Dispatch (or take over) this attempt's run, drive it to its end here, and harvest it."""
    [task] = await runs_on_worker(
        step,
        agent_ids=[agent_id],
        space_id=space_id,
        prompt=prompt,
        schema=schema,
        agent_field="agentId",
        progress=lambda runs: {"runId": runs[0].id, "spaceId": space_id, **(progress or {})},
    )
    output, error = await harvest(step, task, schema)
    return StepResult.failed(error) if error else StepResult.ok(output=output)


async def runs_on_worker(
    step: StepContext,
    *,
    agent_ids: list[str],
    space_id: str,
    prompt: str,
    schema: dict[str, Any] | None,
    agent_field: str,
    progress: Callable[[list[Run]], Mapping[str, Any]],
) -> list[TaskOutcome]:
    """Dispatch (or take over) this attempt's runs, one per agent with one prompt, drive them to their ends here,
    and return how each ended, in the agents' order."""
    runner = step.app.service(AgentRunner)
    runs = await earlier_runs(step)
    if runs:
        order = {a: i for i, a in enumerate(agent_ids)}
        runs.sort(key=lambda r: order.get(r.agent_id, len(order)))
        for run in runs:
            if run.status is RunStatus.running:
                await _take_over(step, runner, run)
    else:
        await _space_folder_here(step, runner, space_id)
        runs = await runner.dispatch_many(
            step.workspace_id,
            agent_ids=agent_ids,
            space_id=space_id,
            prompt=prompt,
            dispatched_by=step.attempt_key,
            prompt_author=pipeline_author(step),
            output_schema=schema,
            agent_field=agent_field,
            attempt_env=attempt_env(step),
            read_only=read_only_for(step),
        )
    drivers = [d for r in runs if (d := runner.driver(r.id)) is not None]
    try:
        await step.progress(progress(runs))
        await asyncio.shield(asyncio.gather(*drivers))
    except asyncio.CancelledError:
        # Fenced (the claim was cancelled, taken after a lapse, or its credential revoked) or the worker stops:
        # the programs are stopped and nothing of the runs' ends is recorded; the next try takes them over.
        for run in runs:
            runner.abandon(run.id)
        await asyncio.gather(*drivers, return_exceptions=True)
        raise
    ended = [await runner.store.get(step.workspace_id, r.id) for r in runs]
    return [TaskOutcome(r.id, (r.outcome or ev.RunOutcome.failed).value, r.output) for r in ended]


async def _space_folder_here(step: StepContext, runner: AgentRunner, space_id: str) -> None:
    """The space's working folder on this worker's host (its data directory has none until a run needs it)."""
    ws = step.workspace_id
    await runner.spaces.get(ws, space_id)  # a space of this workspace, or NotFound before anything is made
    if await step.app.service(IdentityService).get_workspace(ws) is None:
        raise NotFound(f"workspace {ws} no longer exists (it was deleted)")
    datadir, folder = step.app.datadir, runner.spaces.folder(ws, space_id)

    def make() -> None:
        datadir.workspace_dir(ws).mkdir(mode=0o700, exist_ok=True)
        datadir.workspace_folder(ws, folder)

    await asyncio.to_thread(make)


async def _take_over(step: StepContext, runner: AgentRunner, run: Run) -> None:
    """Become the driver of ``run`` (left running by an earlier try) and drive it again, unless it ended
    meanwhile."""
    ws = step.workspace_id
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TAKE_OVER_WAIT_S
    while (took := await runner.control.try_take(run.id, workspace_id=ws)) is None:
        if loop.time() > deadline:
            raise Unavailable(f"agent run {run.id} is still driven by another process; the step is tried again")
        await asyncio.sleep(TAKE_OVER_POLL_S)
    try:
        run = await runner.store.get(ws, run.id)
        if run.status is not RunStatus.running:
            runner.control.release(run.id)
            return
        agent = await runner.agents.get(ws, run.agent_id, field="agentId")
        live = runner.live_run(ws, run, agent, run.first_seq)
        await _close_open_turn(runner, ws, run, live)
        reply = await last_reply(step, run)
        turns = agent.adapter.max_turns if isinstance(agent.adapter, OpenAIAdapter) else 1
        runner.start_driving(
            live,
            run,
            agent,
            "",
            turns,
            attempt_env(step),
            adapter=AlreadyReplied(reply) if reply is not None else None,
            interrupted=took.stop_requested,
        )
    except BaseException:
        runner.control.release(run.id)
        raise


async def _close_open_turn(runner: AgentRunner, ws: str, run: Run, live: LiveRun) -> None:
    """Close the turn an earlier driver started and never finished (it died), so the run's events stay paired."""
    open_turn: int | None = None
    for e in await stored_run_events(runner.app, runner.store, ws, run.id):
        if e.type == ev.TurnStarted.type:
            open_turn = int(e.payload["turn"])
        elif e.type == ev.TurnFinished.type:
            open_turn = None
    if open_turn is not None:
        await live.turn_finished(
            open_turn, ev.RunOutcome.interrupted, "the worker driving this turn stopped; another worker took it over"
        )
