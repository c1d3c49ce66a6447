"""Workspaces and who belongs to them: the workspace rows, memberships and roles.

A membership change may carry the event that announces it (``announce``): the event is staged in the same
transaction as the change (``hangar.core.outbox``) and relayed to the workspace once it commits, so no member
sees an event for a change that did not happen, nor a change without its event. A workspace always keeps at
least one owner; that check and the change it guards run under the write lock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core import outbox
from hangar.core.clock import Clock
from hangar.core.db import write_transaction
from hangar.core.event_types import DomainEvent
from hangar.core.ids import new_id
from hangar.core.principal import Role
from hangar.errors import Conflict, NotFound
from hangar.identity import tables as t
from hangar.identity.authority import AuthorityCache
from hangar.identity.models import Member, Workspace

Relay = Callable[[], Awaitable[object]]


def _membership(workspace_id: str, user_id: str) -> sa.ColumnElement[bool]:
    return sa.and_(t.memberships.c.workspace_id == workspace_id, t.memberships.c.user_id == user_id)


def membership_insert(workspace_id: str, user_id: str, role: Role, now: datetime) -> sa.Insert:
    """The insert of a membership's row (also made by ``hangar.identity.provisioning``, with a new person's)."""
    return sa.insert(t.memberships).values(workspace_id=workspace_id, user_id=user_id, role=role.name, created_at=now)


class Workspaces:
    def __init__(self, engine: AsyncEngine, clock: Clock, authority: AuthorityCache, relay: Relay | None) -> None:
        self._db = engine
        self._clock = clock
        self._authority = authority  # roles are read on every workspace-scoped decision
        self._relay = relay  # carries events staged with records to their workspaces (``hangar.core.outbox``)

    async def create_workspace(self, name: str, owner_id: str, *, workspace_id: str | None = None) -> Workspace:
        """The workspace's row and its owner's membership (its database is made first, complete: see
        ``Databases.create_workspace``)."""
        ws = Workspace(workspace_id or new_id(), name, self._clock.now(), owner_id)
        async with self._db.begin() as conn:
            await conn.execute(
                sa.insert(t.workspaces).values(id=ws.id, name=name, created_at=ws.created_at, created_by=owner_id)
            )
            await conn.execute(membership_insert(ws.id, owner_id, Role.owner, ws.created_at))
        return ws

    async def get_workspace(self, workspace_id: str) -> Workspace | None:
        async with self._db.connect() as conn:
            row = (await conn.execute(sa.select(t.workspaces).where(t.workspaces.c.id == workspace_id))).first()
        return None if row is None else Workspace(row.id, row.name, row.created_at, row.created_by)

    async def list_workspace_ids(self) -> list[str]:
        async with self._db.connect() as conn:
            rows = (await conn.execute(sa.select(t.workspaces.c.id).order_by(t.workspaces.c.created_at))).all()
        return [r[0] for r in rows]

    async def workspaces_of(self, user_id: str) -> list[tuple[Workspace, Role]]:
        q = (
            sa.select(t.workspaces, t.memberships.c.role)
            .join(t.memberships, t.memberships.c.workspace_id == t.workspaces.c.id)
            .where(t.memberships.c.user_id == user_id)
            .order_by(t.workspaces.c.created_at)
        )
        async with self._db.connect() as conn:
            rows = (await conn.execute(q)).all()
        return [(Workspace(r.id, r.name, r.created_at, r.created_by), Role[r.role]) for r in rows]

    async def role_of(self, workspace_id: str, user_id: str, *, as_of: int | None = None) -> Role | None:
        """``as_of``: the authority counter the caller's decision read (``Principal.authority``)."""

        async def load() -> Role | None:
            q = sa.select(t.memberships.c.role).where(_membership(workspace_id, user_id))
            async with self._db.connect() as conn:
                row = (await conn.execute(q)).first()
            return None if row is None else Role[row[0]]

        role: Role | None = await self._authority.get(("role", workspace_id, user_id), load, as_of=as_of)
        return role

    async def members(self, workspace_id: str) -> list[Member]:
        q = (
            sa.select(t.memberships, t.users.c.display_name, t.users.c.email)
            .join(t.users, t.users.c.id == t.memberships.c.user_id)
            .where(t.memberships.c.workspace_id == workspace_id)
            .order_by(t.memberships.c.created_at)
        )
        async with self._db.connect() as conn:
            rows = (await conn.execute(q)).all()
        return [Member(r.user_id, r.display_name, r.email, Role[r.role], r.created_at) for r in rows]

    async def _announce(self, conn: Any, event: DomainEvent | None) -> None:
        """Stage ``event`` in the caller's transaction (it commits with the record it announces)."""
        if event is not None:
            await outbox.stage(conn, event, self._clock.now())

    async def _relayed(self, event: DomainEvent | None) -> None:
        if event is not None and self._relay is not None:
            await self._relay()

    async def add_member(
        self, workspace_id: str, user_id: str, role: Role, *, announce: DomainEvent | None = None
    ) -> None:
        """Add a member (a no-op when already one); ``announce`` is written with the membership."""
        now = self._clock.now()
        async with self._db.begin() as conn:
            exists = (
                await conn.execute(sa.select(t.memberships.c.role).where(_membership(workspace_id, user_id)))
            ).first()
            if exists is not None:
                return
            await conn.execute(membership_insert(workspace_id, user_id, role, now))
            await self._announce(conn, announce)
        await self._relayed(announce)

    async def set_role(
        self, workspace_id: str, user_id: str, role: Role, *, announce: DomainEvent | None = None
    ) -> None:
        # Check and change under the write lock: two owners demoting themselves at once cannot both pass.
        async with write_transaction(self._db) as conn:
            await self._guard_last_owner(conn, workspace_id, user_id, role)
            done = await conn.execute(
                sa.update(t.memberships).where(_membership(workspace_id, user_id)).values(role=role.name)
            )
            if done.rowcount == 0:
                raise NotFound(f"user {user_id} is not a member of this workspace")
            await self._announce(conn, announce)
        await self._relayed(announce)

    async def remove_member(self, workspace_id: str, user_id: str, *, announce: DomainEvent | None = None) -> None:
        async with write_transaction(self._db) as conn:
            await self._guard_last_owner(conn, workspace_id, user_id, None)
            done = await conn.execute(sa.delete(t.memberships).where(_membership(workspace_id, user_id)))
            if done.rowcount == 0:
                raise NotFound(f"user {user_id} is not a member of this workspace")
            await self._announce(conn, announce)
        await self._relayed(announce)

    async def _guard_last_owner(self, conn: Any, workspace_id: str, user_id: str, new_role: Role | None) -> None:
        """A workspace always keeps at least one owner."""
        if new_role is Role.owner:
            return
        q = sa.select(t.memberships.c.user_id).where(
            t.memberships.c.workspace_id == workspace_id, t.memberships.c.role == Role.owner.name
        )
        owners = {r[0] for r in (await conn.execute(q)).all()}
        if owners == {user_id}:
            raise Conflict("the workspace's last owner cannot be demoted or removed")
