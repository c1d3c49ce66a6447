"""Ops on agents and agent runs, and the team dispatch op (it needs the runner)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from hangar.agents.results import (
    AgentDeleted,
    AgentList,
    AgentView,
    DispatchedRun,
    DispatchedRuns,
    FrontDoor,
    RunEventFrame,
    RunEvents,
    RunList,
    RunView,
    TeamDispatch,
)
from hangar.agents.run_events import stored_run_events
from hangar.agents.runner import AgentRunner
from hangar.agents.runs import Run, RunStatus
from hangar.agents.service import AgentService
from hangar.agents.teams import TeamService, check_dispatch_mode
from hangar.agents.tools.catalogue import DEFAULT_PRODUCT_TOOLS
from hangar.core.part import OpFunction
from hangar.errors import Conflict, InvalidArgs
from hangar.identity import IdentityService
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, NoArgs, op
from hangar.workspace import audit_queued, author_of


class AgentCreateArgs(Args):
    name: str
    role: str = "member"
    system_prompt: str = ""
    adapter: dict[str, Any]


@op("agents.create", kind="mutate", scope="workspace", min_role="admin", actions=["secretAccess"])
async def agents_create(ctx: OpContext, args: AgentCreateArgs) -> AgentView:
    """Create an agent; an ``openai`` adapter's ``apiKey`` goes to the secrets file and is never returned. A
    workspace admin's ``baseUrl`` must be one the server may reach for them: a public address, or a host the
    server owner names (``trustedModelHosts``); the server owner's may be any."""
    agent = await ctx.app.service(AgentService).create(
        ctx.ws,
        name=args.name,
        role=args.role,
        system_prompt=args.system_prompt,
        adapter=args.adapter,
        by_owner=ctx.principal.is_server_owner,
    )
    await ctx.audit("agents.create", f"agent:{agent.id}", {"name": agent.name, "adapter": agent.adapter.type})
    return AgentView.of(agent)


@op("agents.list", kind="read", scope="workspace")
async def agents_list(ctx: OpContext, args: NoArgs) -> AgentList:
    """List the workspace's agents."""
    return AgentList(agents=[AgentView.of(a) for a in await ctx.app.service(AgentService).all(ctx.ws)])


class AgentRef(Args):
    agent_id: str


@op("agents.get", kind="read", scope="workspace")
async def agents_get(ctx: OpContext, args: AgentRef) -> AgentView:
    """One agent (``hasApiKey`` instead of the key)."""
    return AgentView.of(await ctx.app.service(AgentService).get(ctx.ws, args.agent_id))


@op("agents.frontDoor", kind="read", scope="workspace")
async def agents_front_door(ctx: OpContext, args: NoArgs) -> FrontDoor:
    """The agent a new conversation wakes: the chief-executive agent, else the first agent, else none."""
    agent = await ctx.app.service(AgentService).front_door(ctx.ws)
    return FrontDoor(agent=AgentView.of(agent) if agent else None)


class AgentUpdateArgs(Args):
    agent_id: str
    name: str | None = None
    role: str | None = None
    system_prompt: str | None = None
    adapter: dict[str, Any] | None = None


@op("agents.update", kind="mutate", scope="workspace", min_role="admin", actions=["secretAccess"])
async def agents_update(ctx: OpContext, args: AgentUpdateArgs) -> AgentView:
    """Edit an agent; an adapter given without ``apiKey`` keeps the stored key. A ``baseUrl`` is held to the rules
    of ``agents.create`` for whoever saves it."""
    agent = await ctx.app.service(AgentService).update(
        ctx.ws,
        args.agent_id,
        name=args.name,
        role=args.role,
        system_prompt=args.system_prompt,
        adapter=args.adapter,
        by_owner=ctx.principal.is_server_owner,
    )
    # Tools taken from the agent are taken from its credentials of runs still going (in a server's MCP endpoint
    # or on a worker) before this answers: their next call of such a tool is refused.
    names = agent.adapter.product_tools
    allowed = frozenset(DEFAULT_PRODUCT_TOOLS if names is None else names)
    await ctx.app.service(IdentityService).narrow_agent_devices(ctx.ws, agent.id, allowed)
    await ctx.audit("agents.update", f"agent:{agent.id}", {"name": agent.name, "adapter": agent.adapter.type})
    return AgentView.of(agent)


@op("agents.delete", kind="destructive", scope="workspace", min_role="admin", actions=["secretAccess"])
async def agents_delete(ctx: OpContext, args: AgentRef) -> AgentDeleted:
    """Delete an agent and its stored key; refused while it has runs in progress or belongs to a team."""
    running = await ctx.app.service(AgentRunner).store.all(ctx.ws, agent_id=args.agent_id, status=RunStatus.running)
    if running:
        raise Conflict(f"agent {args.agent_id} has {len(running)} run(s) in progress; interrupt them first")
    teams = await ctx.app.service(TeamService).teams_of(ctx.ws, args.agent_id)
    if teams:
        raise Conflict(f"agent {args.agent_id} is a member of {len(teams)} team(s); remove it from them first")
    await ctx.app.service(AgentService).delete(ctx.ws, args.agent_id)
    await ctx.audit("agents.delete", f"agent:{args.agent_id}")
    return AgentDeleted()


class AgentRunArgs(Args):
    agent_id: str
    space_id: str
    prompt: str
    output_schema: dict[str, Any] | None = None
    max_turns: int | None = None


@op("agents.run", kind="mutate", scope="workspace", actions=["networkEgress", "processSpawn"])
async def agents_run(ctx: OpContext, args: AgentRunArgs) -> DispatchedRun:
    """Dispatch an agent into a space with a prompt; returns at once with the run id (follow it with
    ``spaces.watch`` or ``runs.get``)."""
    run = await ctx.app.service(AgentRunner).dispatch(
        ctx.ws,
        agent_id=args.agent_id,
        space_id=args.space_id,
        prompt=args.prompt,
        dispatched_by=ctx.principal.label,
        prompt_author=author_of(ctx),
        output_schema=args.output_schema,
        max_turns=args.max_turns,
    )
    await audit_queued(ctx, "agents.run", f"run:{run.id}", {"agentId": run.agent_id, "spaceId": run.space_id})
    return DispatchedRun.of(run)


class AgentRunManyArgs(Args):
    agent_ids: list[str] = Field(min_length=1, max_length=20)
    space_id: str
    prompt: str
    max_turns: int | None = None

    @field_validator("agent_ids")
    @classmethod
    def _distinct(cls, v: list[str]) -> list[str]:
        return list(dict.fromkeys(v))


@op("agents.runMany", kind="mutate", scope="workspace", actions=["networkEgress", "processSpawn"])
async def agents_run_many(ctx: OpContext, args: AgentRunManyArgs) -> DispatchedRuns:
    """Dispatch several agents into a space on one prompt (a message mentioning each of them): the prompt is
    posted once and every agent runs on it; returns at once with the runs, in the order asked."""
    runs = await ctx.app.service(AgentRunner).dispatch_many(
        ctx.ws,
        agent_ids=args.agent_ids,
        space_id=args.space_id,
        prompt=args.prompt,
        dispatched_by=ctx.principal.label,
        prompt_author=author_of(ctx),
        max_turns=args.max_turns,
        agent_field="agentIds",
    )
    run_ids = [r.id for r in runs]
    await audit_queued(
        ctx, "agents.runMany", f"space:{args.space_id}", {"runIds": run_ids, "agentIds": [r.agent_id for r in runs]}
    )
    return DispatchedRuns(runs=[DispatchedRun.of(r) for r in runs], run_ids=run_ids)


class RunRef(Args):
    run_id: str


async def _run_in_reach(ctx: OpContext, run_id: str) -> Run:
    """The run, once its space has been held to a credential limited to one space (the op names a run, so the
    dispatcher saw no space)."""
    run = await ctx.app.service(AgentRunner).store.get(ctx.ws, run_id)
    ctx.principal.check_space(run.space_id, action=ctx.spec.name, subject=f"run {run_id}")
    return run


@op("runs.get", kind="read", scope="workspace")
async def runs_get(ctx: OpContext, args: RunRef) -> RunView:
    """One run: status, outcome, error, turns and the harvested output."""
    return RunView.model_validate(await _run_in_reach(ctx, args.run_id))


class RunListArgs(Args):
    space_id: str | None = None
    agent_id: str | None = None
    status: str | None = None
    limit: int = Field(default=100, ge=1, le=1000)


@op("runs.list", kind="read", scope="workspace")
async def runs_list(ctx: OpContext, args: RunListArgs) -> RunList:
    """Runs, newest first, optionally of one space, agent or status (``running``, ``finished``); for a credential
    limited to one space, of that space."""
    if args.status is not None and args.status not in list(RunStatus):
        raise InvalidArgs(f"status must be one of {', '.join(RunStatus)}, not {args.status!r}", field="status")
    status = None if args.status is None else RunStatus(args.status)
    space_id = args.space_id or ctx.principal.space_id  # another space than the credential's was refused
    runs = await ctx.app.service(AgentRunner).store.all(
        ctx.ws, space_id=space_id, agent_id=args.agent_id, status=status, limit=args.limit
    )
    return RunList(runs=[RunView.model_validate(r) for r in runs])


@op("runs.events", kind="read", scope="workspace")
async def runs_events(ctx: OpContext, args: RunRef) -> RunEvents:
    """The persisted turn events of one run, in order."""
    await _run_in_reach(ctx, args.run_id)
    events = await stored_run_events(ctx.app, ctx.app.service(AgentRunner).store, ctx.ws, args.run_id)
    return RunEvents(events=[RunEventFrame.of(e) for e in events])


@op("runs.interrupt", kind="mutate", scope="workspace")
async def runs_interrupt(ctx: OpContext, args: RunRef) -> RunView:
    """Stop a running run (outcome ``interrupted``), whichever process drives it, and return it once it is over;
    a finished run is returned unchanged."""
    await _run_in_reach(ctx, args.run_id)
    run = await ctx.app.service(AgentRunner).interrupt(ctx.ws, args.run_id, by=ctx.principal.label)
    await audit_queued(ctx, "runs.interrupt", f"run:{run.id}", {"outcome": run.outcome})
    return RunView.model_validate(run)


class TeamDispatchArgs(Args):
    team_id: str
    space_id: str
    prompt: str
    dispatch_mode: str | None = None
    output_schema: dict[str, Any] | None = None


@op("teams.dispatch", kind="mutate", scope="workspace", actions=["networkEgress", "processSpawn"])
async def teams_dispatch(ctx: OpContext, args: TeamDispatchArgs) -> TeamDispatch:
    """Dispatch a team into a space: every member (``allParallel``) or only the leader (``manager``)."""
    team = await ctx.app.service(TeamService).get(ctx.ws, args.team_id)
    mode = check_dispatch_mode(args.dispatch_mode) if args.dispatch_mode else team.dispatch_mode
    runs = await ctx.app.service(AgentRunner).dispatch_many(
        ctx.ws,
        agent_ids=team.dispatch_targets(mode),
        space_id=args.space_id,
        prompt=args.prompt,
        dispatched_by=ctx.principal.label,
        prompt_author=author_of(ctx),
        output_schema=args.output_schema,
    )
    run_ids = [r.id for r in runs]
    await audit_queued(ctx, "teams.dispatch", f"team:{team.id}", {"runIds": run_ids, "mode": mode})
    return TeamDispatch(run_ids=run_ids, dispatch_mode=mode)


OPS: list[OpFunction] = [
    agents_create,
    agents_list,
    agents_get,
    agents_front_door,
    agents_update,
    agents_delete,
    agents_run,
    agents_run_many,
    runs_get,
    runs_list,
    runs_events,
    runs_interrupt,
    teams_dispatch,
]
