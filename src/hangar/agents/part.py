"""The agents part: its tables, ops, events, pipeline bodies, and the agent, team and runner services."""

from __future__ import annotations

import dataclasses

from hangar.agents.bodies import BODIES
from hangar.agents.endpoints import TRUSTED_MODEL_HOSTS_SPEC
from hangar.agents.events import AGENT_EVENTS
from hangar.agents.ops import AGENT_OPS
from hangar.agents.orchestration import bodies as orchestration_bodies
from hangar.agents.orchestration import ops as orchestration_ops
from hangar.agents.orchestration.events import ORCHESTRATION_EVENTS
from hangar.agents.orchestration.service import OrchestrationService
from hangar.agents.pipeline_follow import PipelineFollower
from hangar.agents.runner import AgentRunner
from hangar.agents.runs import RunStore
from hangar.agents.service import AgentSecretValues, AgentService
from hangar.agents.skills import body as skills_body
from hangar.agents.skills import ops as skills_ops
from hangar.agents.skills.events import SKILL_EVENTS
from hangar.agents.tables import MIGRATIONS
from hangar.agents.teams import TeamService
from hangar.agents.worker_forge import ROUTES as WORKER_FORGE_ROUTES
from hangar.agents.worker_grants import ROUTES as WORKER_GRANT_ROUTES
from hangar.core.context import AppContext
from hangar.core.part import Part
from hangar.core.redact import SecretValues
from hangar.identity import usable_workspace_ids
from hangar.workspace import SpaceService

# On PostgreSQL, how often each server looks for agent runs a dead server left running (one query per workspace).
RECOVER_INTERVAL_S = 2.0


async def _start(app: AppContext) -> None:
    agents = app.provide(AgentService(app))
    app.provide(AgentSecretValues(agents), as_type=SecretValues)
    app.provide(TeamService(app, agents))
    app.provide(OrchestrationService(app)).follow_runs()
    runner = app.provide(AgentRunner(app, agents, app.service(SpaceService)))
    app.provide(PipelineFollower(runner)).start()
    # Runs a previous process left running can never finish now: close them so their waiters move on.
    for workspace_id in await usable_workspace_ids(app):
        await runner.recover(workspace_id)
    if runner.control.in_database:  # another server's runs are abandoned when it dies, not only at a start
        runner.recover_every(RECOVER_INTERVAL_S, lambda: usable_workspace_ids(app))


async def _stop(app: AppContext) -> None:
    orchestrations = app.maybe_service(OrchestrationService)
    if orchestrations is not None:
        await orchestrations.aclose()
    follower = app.maybe_service(PipelineFollower)
    if follower is not None:
        await follower.aclose()
    runner = app.maybe_service(AgentRunner)
    if runner is not None:
        await runner.aclose()


async def _event_floor(app: AppContext, workspace_id: str) -> int | None:
    """What retention keeps for this part: the events of running runs."""
    return await RunStore(app).needed_events_after(workspace_id)


AGENTS_PART = Part(
    name="agents",
    ops=[*AGENT_OPS, *orchestration_ops.OPS, *skills_ops.OPS],
    migrations=[MIGRATIONS],
    events=(*AGENT_EVENTS, *ORCHESTRATION_EVENTS, *SKILL_EVENTS),
    bodies=[*BODIES, *orchestration_bodies.BODIES, *skills_body.BODIES],
    server_settings=[TRUSTED_MODEL_HOSTS_SPEC],
    routes=[*WORKER_GRANT_ROUTES, *WORKER_FORGE_ROUTES],
    start=_start,
    stop=_stop,
    event_floor=_event_floor,
)


async def _worker_start(app: AppContext) -> None:
    """A ``hangar worker``'s agents: the services its agent steps drive runs with, and none of a server's
    looks for abandoned runs or pipeline cancellations (the servers do those)."""
    agents = app.provide(AgentService(app))
    app.provide(AgentSecretValues(agents), as_type=SecretValues)
    app.provide(TeamService(app, agents))
    app.provide(AgentRunner(app, agents, app.service(SpaceService)))


AGENTS_WORKER_PART = dataclasses.replace(AGENTS_PART, start=_worker_start)
