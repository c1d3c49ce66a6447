"""Teams: named groups of agents with a leader and a default dispatch mode.

``allParallel`` dispatches every member with the same prompt; ``manager`` dispatches only the leader, who
coordinates. Members are checked against the agents when a team is saved (no foreign key: the team tables
were created by the workspace part's first migration, see ``agents.tables``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from hangar.agents import tables
from hangar.agents.service import AgentService
from hangar.core.context import AppContext
from hangar.core.ids import new_id
from hangar.core.wire import require_text
from hangar.errors import InvalidArgs, NotFound

DISPATCH_MODES: tuple[str, ...] = ("allParallel", "manager")


def check_dispatch_mode(mode: str, field: str = "dispatchMode") -> str:
    if mode not in DISPATCH_MODES:
        raise InvalidArgs(f"{field} must be one of {', '.join(DISPATCH_MODES)}, not {mode!r}", field=field)
    return mode


@dataclass(frozen=True)
class Team:
    id: str
    name: str
    leader_agent_id: str | None
    dispatch_mode: str
    member_ids: tuple[str, ...]
    created_at: datetime
    updated_at: datetime

    def dispatch_targets(self, mode: str | None = None) -> list[str]:
        """The agents one dispatch reaches: every member, or only the leader in ``manager`` mode."""
        if (mode or self.dispatch_mode) == "manager":
            return [self.leader_agent_id or self.member_ids[0]]
        return list(self.member_ids)


class TeamService:
    def __init__(self, app: AppContext, agents: AgentService) -> None:
        self._app = app
        self._agents = agents

    async def _check_members(self, workspace_id: str, member_ids: list[str], leader_id: str | None) -> None:
        if not member_ids:
            raise InvalidArgs("a team needs at least one member", field="memberIds")
        if len(set(member_ids)) != len(member_ids):
            raise InvalidArgs("memberIds lists an agent twice", field="memberIds")
        if leader_id is not None and leader_id not in member_ids:
            raise InvalidArgs(f"leaderId {leader_id} is not one of the team's members", field="leaderId")
        for agent_id in member_ids:
            await self._agents.get(workspace_id, agent_id)

    async def create(
        self,
        workspace_id: str,
        *,
        name: str,
        member_ids: list[str],
        leader_id: str | None = None,
        dispatch_mode: str = "allParallel",
    ) -> Team:
        name = require_text(name, "name", limit=200)
        check_dispatch_mode(dispatch_mode)
        await self._check_members(workspace_id, member_ids, leader_id)
        team_id = new_id()
        now = self._app.clock.now()
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            await conn.execute(
                sa.insert(tables.teams).values(
                    id=team_id,
                    name=name,
                    leader_agent_id=leader_id or member_ids[0],
                    dispatch_mode=dispatch_mode,
                    created_at=now,
                    updated_at=now,
                )
            )
            await self._write_members(conn, team_id, member_ids)
        return await self.get(workspace_id, team_id)

    @staticmethod
    async def _write_members(conn: Any, team_id: str, member_ids: list[str]) -> None:
        await conn.execute(sa.delete(tables.team_members).where(tables.team_members.c.team_id == team_id))
        await conn.execute(
            sa.insert(tables.team_members),
            [{"team_id": team_id, "agent_id": a, "position": i} for i, a in enumerate(member_ids)],
        )

    async def get(self, workspace_id: str, team_id: str) -> Team:
        teams = await self._load(workspace_id, team_id)
        if not teams:
            raise NotFound(f"team {team_id} does not exist in this workspace")
        return teams[0]

    async def all(self, workspace_id: str) -> list[Team]:
        return await self._load(workspace_id, None)

    async def _load(self, workspace_id: str, team_id: str | None) -> list[Team]:
        t, m = tables.teams, tables.team_members
        q = sa.select(t).order_by(t.c.name, t.c.id)
        mq = sa.select(m).order_by(m.c.team_id, m.c.position)
        if team_id is not None:
            q, mq = q.where(t.c.id == team_id), mq.where(m.c.team_id == team_id)
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            rows = (await conn.execute(q)).mappings().all()
            members = (await conn.execute(mq)).mappings().all()
        by_team: dict[str, list[str]] = {}
        for mem in members:
            by_team.setdefault(mem["team_id"], []).append(mem["agent_id"])
        return [
            Team(
                id=r["id"],
                name=r["name"],
                leader_agent_id=r["leader_agent_id"],
                dispatch_mode=r["dispatch_mode"],
                member_ids=tuple(by_team.get(r["id"], [])),
                created_at=r["created_at"],
                updated_at=r["updated_at"],
            )
            for r in rows
        ]

    async def update(
        self,
        workspace_id: str,
        team_id: str,
        *,
        name: str | None = None,
        member_ids: list[str] | None = None,
        leader_id: str | None = None,
        dispatch_mode: str | None = None,
    ) -> Team:
        team = await self.get(workspace_id, team_id)
        members = member_ids if member_ids is not None else list(team.member_ids)
        leader = leader_id or (team.leader_agent_id if team.leader_agent_id in members else members[0])
        await self._check_members(workspace_id, members, leader)
        values: dict[str, Any] = {"updated_at": self._app.clock.now(), "leader_agent_id": leader}
        if name is not None:
            values["name"] = require_text(name, "name", limit=200)
        if dispatch_mode is not None:
            values["dispatch_mode"] = check_dispatch_mode(dispatch_mode)
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            await conn.execute(sa.update(tables.teams).where(tables.teams.c.id == team_id).values(**values))
            if member_ids is not None:
                await self._write_members(conn, team_id, members)
        return await self.get(workspace_id, team_id)

    async def delete(self, workspace_id: str, team_id: str) -> None:
        await self.get(workspace_id, team_id)
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            await conn.execute(sa.delete(tables.teams).where(tables.teams.c.id == team_id))

    async def teams_of(self, workspace_id: str, agent_id: str) -> list[str]:
        m = tables.team_members
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            rows = (await conn.execute(sa.select(m.c.team_id).where(m.c.agent_id == agent_id))).scalars().all()
        return list(rows)
