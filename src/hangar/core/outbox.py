"""Events about server-database records, written with them: the outbox.

A membership lives in the server database, its events (``identity.memberRemoved``...) in the workspace's
database, and no transaction spans two SQLite files. So the event is written to ``event_outbox`` in the server
database in the same transaction as the record, and relayed to the workspace afterwards: at once by the process
that wrote it, and by any server's event tail when it notices the authority counter move (a process killed
between the two leaves the row; the next relay carries it). Relaying is idempotent: an event whose id the
workspace already holds is not written twice, and the outbox row is deleted only after the workspace has it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.core.event_types import DomainEvent
from hangar.core.events import EventBus
from hangar.core.ids import new_id
from hangar.core.types import UtcDateTime
from hangar.errors import NotFound

log = logging.getLogger(__name__)

metadata = sa.MetaData()

event_outbox = sa.Table(
    "event_outbox",
    metadata,
    sa.Column("position", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("id", sa.String(36), nullable=False),
    sa.Column("workspace_id", sa.String(64), nullable=False),
    sa.Column("type", sa.String(128), nullable=False),
    sa.Column("occurred_at", UtcDateTime(), nullable=False),
    sa.Column("payload", sa.JSON, nullable=False),
)


async def stage(conn: AsyncConnection, event: DomainEvent, now: datetime) -> None:
    """Write ``event`` to the outbox within the caller's server-database transaction."""
    await conn.execute(
        sa.insert(event_outbox).values(
            id=new_id(), workspace_id=event.workspace_id, type=event.type, occurred_at=now, payload=event.payload()
        )
    )


class Outbox:
    """Relays staged events from the server database to their workspaces, in the order they were staged."""

    def __init__(self, server: AsyncEngine, bus: EventBus) -> None:
        self._server = server
        self._bus = bus
        self._lock = asyncio.Lock()

    async def relay(self) -> int:
        """Carry every staged event to its workspace; returns how many were carried."""
        async with self._lock:
            async with self._server.connect() as conn:
                rows = (await conn.execute(sa.select(event_outbox).order_by(event_outbox.c.position))).all()
            carried = 0
            for row in rows:
                try:
                    await self._bus.publish_once(row.workspace_id, row.id, row.type, row.occurred_at, row.payload)
                except NotFound:
                    log.warning("event %s dropped: workspace %s has no database", row.type, row.workspace_id)
                except Exception as exc:  # a damaged workspace must not hold up the others
                    log.warning("event %s for workspace %s not relayed yet: %s", row.type, row.workspace_id, exc)
                    continue
                async with self._server.begin() as conn:
                    await conn.execute(sa.delete(event_outbox).where(event_outbox.c.position == row.position))
                carried += 1
            return carried

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """No relay of this process runs until the block ends (one under way finishes first): rows staged or
        written meanwhile stay in the outbox. The event tail relays whenever the authority counter has moved since
        its last look, which on a loaded host may be seconds after the change; a test that places rows in the
        outbox holds it so the tail cannot carry them off in between."""
        async with self._lock:
            yield
