"""Ops on teams: create, list, get, update, delete (dispatching a team is ``teams.dispatch`` in ``agents``)."""

from __future__ import annotations

from hangar.agents.results import TeamDeleted, TeamList, TeamView
from hangar.agents.teams import TeamService
from hangar.core.part import OpFunction
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, NoArgs, op


class TeamCreateArgs(Args):
    name: str
    member_ids: list[str]
    leader_id: str | None = None
    dispatch_mode: str = "allParallel"


@op("teams.create", kind="mutate", scope="workspace")
async def teams_create(ctx: OpContext, args: TeamCreateArgs) -> TeamView:
    """Create a team of agents with a leader and a default dispatch mode."""
    team = await ctx.app.service(TeamService).create(
        ctx.ws, name=args.name, member_ids=args.member_ids, leader_id=args.leader_id, dispatch_mode=args.dispatch_mode
    )
    await ctx.audit("teams.create", f"team:{team.id}", {"name": team.name, "members": list(team.member_ids)})
    return TeamView.of(team)


@op("teams.list", kind="read", scope="workspace")
async def teams_list(ctx: OpContext, args: NoArgs) -> TeamList:
    """List the workspace's teams."""
    return TeamList(teams=[TeamView.of(t) for t in await ctx.app.service(TeamService).all(ctx.ws)])


class TeamRef(Args):
    team_id: str


@op("teams.get", kind="read", scope="workspace")
async def teams_get(ctx: OpContext, args: TeamRef) -> TeamView:
    """One team."""
    return TeamView.of(await ctx.app.service(TeamService).get(ctx.ws, args.team_id))


class TeamUpdateArgs(Args):
    team_id: str
    name: str | None = None
    member_ids: list[str] | None = None
    leader_id: str | None = None
    dispatch_mode: str | None = None


@op("teams.update", kind="mutate", scope="workspace")
async def teams_update(ctx: OpContext, args: TeamUpdateArgs) -> TeamView:
    """Rename a team, change its members, leader or dispatch mode."""
    team = await ctx.app.service(TeamService).update(
        ctx.ws,
        args.team_id,
        name=args.name,
        member_ids=args.member_ids,
        leader_id=args.leader_id,
        dispatch_mode=args.dispatch_mode,
    )
    await ctx.audit("teams.update", f"team:{team.id}", {"members": list(team.member_ids)})
    return TeamView.of(team)


@op("teams.delete", kind="destructive", scope="workspace")
async def teams_delete(ctx: OpContext, args: TeamRef) -> TeamDeleted:
    """Delete a team (its agents stay)."""
    await ctx.app.service(TeamService).delete(ctx.ws, args.team_id)
    await ctx.audit("teams.delete", f"team:{args.team_id}")
    return TeamDeleted()


OPS: list[OpFunction] = [teams_create, teams_list, teams_get, teams_update, teams_delete]
