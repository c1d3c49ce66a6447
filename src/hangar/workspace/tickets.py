"""Tickets: units of work with a reporter, a status, and a tree of sub-tickets."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from hangar.core.context import AppContext
from hangar.core.ids import new_id
from hangar.errors import InvalidArgs, NotFound
from hangar.workspace import tables
from hangar.workspace.events import TicketChanged
from hangar.workspace.records import require_text

STATUSES: tuple[str, ...] = ("open", "inProgress", "blocked", "done", "cancelled")
DESCRIPTION_MAX = 50_000


def check_status(status: str) -> str:
    if status not in STATUSES:
        raise InvalidArgs(f"status must be one of {', '.join(STATUSES)}, not {status!r}", field="status")
    return status


@dataclass(frozen=True)
class Ticket:
    id: str
    title: str
    description: str
    reporter: str
    status: str
    parent_id: str | None
    space_id: str | None
    created_at: datetime
    updated_at: datetime


class TicketService:
    def __init__(self, app: AppContext) -> None:
        self._app = app

    async def create(
        self,
        workspace_id: str,
        *,
        title: str,
        reporter: str,
        description: str = "",
        parent_id: str | None = None,
        status: str = "open",
        space_id: str | None = None,
    ) -> Ticket:
        title = require_text(title, "title", limit=300)
        if len(description) > DESCRIPTION_MAX:
            raise InvalidArgs(f"description is longer than {DESCRIPTION_MAX} characters", field="description")
        check_status(status)
        if parent_id is not None:
            await self.get(workspace_id, parent_id, field="parentId")
        ticket_id = new_id()
        now = self._app.clock.now()
        async with self._app.bus.transaction(workspace_id) as tx:
            await tx.conn.execute(
                sa.insert(tables.tickets).values(
                    id=ticket_id,
                    title=title,
                    description=description,
                    reporter=reporter,
                    status=status,
                    parent_id=parent_id,
                    space_id=space_id,
                    created_at=now,
                    updated_at=now,
                )
            )
            await tx.publish(TicketChanged(workspace_id=workspace_id, ticket_id=ticket_id, status=status))
        return await self.get(workspace_id, ticket_id)

    async def get(self, workspace_id: str, ticket_id: str, *, field: str = "ticketId") -> Ticket:
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            row = (
                (await conn.execute(sa.select(tables.tickets).where(tables.tickets.c.id == ticket_id)))
                .mappings()
                .first()
            )
        if row is None:
            raise NotFound(f"{field}: ticket {ticket_id} does not exist in this workspace")
        return Ticket(**dict(row))

    async def all(
        self, workspace_id: str, *, parent_id: str | None = None, roots_only: bool = False, status: str | None = None
    ) -> list[Ticket]:
        t = tables.tickets
        q = sa.select(t).order_by(t.c.created_at, t.c.id)
        if parent_id is not None:
            q = q.where(t.c.parent_id == parent_id)
        elif roots_only:
            q = q.where(t.c.parent_id.is_(None))
        if status is not None:
            q = q.where(t.c.status == check_status(status))
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            rows = (await conn.execute(q)).mappings().all()
        return [Ticket(**dict(r)) for r in rows]

    async def update(
        self,
        workspace_id: str,
        ticket_id: str,
        *,
        title: str | None = None,
        description: str | None = None,
        status: str | None = None,
        parent_id: str | None = None,
        detach: bool = False,
    ) -> Ticket:
        current = await self.get(workspace_id, ticket_id)
        values: dict[str, Any] = {"updated_at": self._app.clock.now()}
        if title is not None:
            values["title"] = require_text(title, "title", limit=300)
        if description is not None:
            if len(description) > DESCRIPTION_MAX:
                raise InvalidArgs(f"description is longer than {DESCRIPTION_MAX} characters", field="description")
            values["description"] = description
        if status is not None:
            values["status"] = check_status(status)
        if detach:
            values["parent_id"] = None
        elif parent_id is not None:
            await self._check_parent(workspace_id, ticket_id, parent_id)
            values["parent_id"] = parent_id
        async with self._app.bus.transaction(workspace_id) as tx:
            t = tables.tickets
            await tx.conn.execute(sa.update(t).where(t.c.id == ticket_id).values(**values))
            status_now = (await tx.conn.execute(sa.select(t.c.status).where(t.c.id == ticket_id))).scalar_one()
            if status_now != current.status:
                await tx.publish(TicketChanged(workspace_id=workspace_id, ticket_id=ticket_id, status=status_now))
        return await self.get(workspace_id, ticket_id)

    async def _check_parent(self, workspace_id: str, ticket_id: str, parent_id: str) -> None:
        """A parent must exist and must not be the ticket itself or one of its descendants."""
        cursor: str | None = parent_id
        while cursor is not None:
            if cursor == ticket_id:
                raise InvalidArgs("parentId would make the ticket its own ancestor", field="parentId")
            cursor = (await self.get(workspace_id, cursor, field="parentId")).parent_id

    async def delete(self, workspace_id: str, ticket_id: str) -> int:
        """Delete a ticket and its sub-tickets; returns how many were deleted."""
        await self.get(workspace_id, ticket_id)
        doomed = [ticket_id]
        frontier = [ticket_id]
        while frontier:
            children = [c.id for p in frontier for c in await self.all(workspace_id, parent_id=p)]
            doomed += children
            frontier = children
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            await conn.execute(sa.delete(tables.tickets).where(tables.tickets.c.id.in_(doomed)))
        return len(doomed)
