"""Tickets: units of work with a reporter, a status, and a tree of sub-tickets."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.core.context import AppContext
from hangar.core.db import write_transaction
from hangar.core.ids import new_id
from hangar.core.wire import require_text
from hangar.errors import Conflict, InvalidArgs, NotFound
from hangar.workspace import tables
from hangar.workspace.events import TicketChanged

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


async def _ticket(conn: AsyncConnection, ticket_id: str, field: str) -> Ticket:
    row = (await conn.execute(sa.select(tables.tickets).where(tables.tickets.c.id == ticket_id))).mappings().first()
    if row is None:
        raise NotFound(f"{field}: ticket {ticket_id} does not exist in this workspace")
    return Ticket(**dict(row))


async def _check_parent(conn: AsyncConnection, ticket_id: str, parent_id: str) -> None:
    """A parent must exist and must not be the ticket itself or one of its descendants. The walk up remembers
    where it has been: a loop already stored (an older server's, one written by hand) ends it with a refusal
    instead of holding it forever."""
    seen: set[str] = set()
    cursor: str | None = parent_id
    while cursor is not None:
        if cursor == ticket_id:
            raise InvalidArgs("parentId would make the ticket its own ancestor", field="parentId")
        if cursor in seen:
            raise Conflict(
                f"parentId: the ancestors of ticket {parent_id} form a loop through ticket {cursor}; "
                "detach one of them (tickets.update with detach) first"
            )
        seen.add(cursor)
        cursor = (await _ticket(conn, cursor, "parentId")).parent_id


class TicketService:
    """Every change that reads the tree before writing it (a parent's existence, the walk up from a new parent,
    the sub-tickets a delete takes) runs in one serialized transaction (``serialized``: the write lock from its
    first statement), so two callers each making the other's ticket its parent cannot both pass the check."""

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
        ticket_id = new_id()
        now = self._app.clock.now()
        async with self._app.bus.transaction(workspace_id, serialized=True) as tx:
            if parent_id is not None:
                await _ticket(tx.conn, parent_id, "parentId")
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
            return await _ticket(conn, ticket_id, field)

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
        values: dict[str, Any] = {"updated_at": self._app.clock.now()}
        if title is not None:
            values["title"] = require_text(title, "title", limit=300)
        if description is not None:
            if len(description) > DESCRIPTION_MAX:
                raise InvalidArgs(f"description is longer than {DESCRIPTION_MAX} characters", field="description")
            values["description"] = description
        if status is not None:
            values["status"] = check_status(status)
        async with self._app.bus.transaction(workspace_id, serialized=True) as tx:
            current = await _ticket(tx.conn, ticket_id, "ticketId")
            if detach:
                values["parent_id"] = None
            elif parent_id is not None:
                await _check_parent(tx.conn, ticket_id, parent_id)
                values["parent_id"] = parent_id
            t = tables.tickets
            await tx.conn.execute(sa.update(t).where(t.c.id == ticket_id).values(**values))
            if values.get("status", current.status) != current.status:
                await tx.publish(TicketChanged(workspace_id=workspace_id, ticket_id=ticket_id, status=values["status"]))
        return await self.get(workspace_id, ticket_id)

    async def delete(self, workspace_id: str, ticket_id: str) -> int:
        """Delete a ticket and its sub-tickets; returns how many were deleted. The walk down takes each ticket
        once, so a stored loop (each ticket the other's sub-ticket) ends it too."""
        t = tables.tickets
        engine = await self._app.dbs.workspace(workspace_id)
        async with write_transaction(engine) as conn:
            await _ticket(conn, ticket_id, "ticketId")
            doomed = {ticket_id}
            frontier = [ticket_id]
            while frontier:
                rows = await conn.execute(sa.select(t.c.id).where(t.c.parent_id.in_(frontier)))
                frontier = [r.id for r in rows if r.id not in doomed]
                doomed.update(frontier)
            await conn.execute(sa.delete(t).where(t.c.id.in_(doomed)))
        return len(doomed)
