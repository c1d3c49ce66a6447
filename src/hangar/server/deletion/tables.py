"""The server's record of workspace deletions (schema in ``migrations``): one row per deleted workspace.

A row in state ``deleting`` is a deletion under way; ``step`` says how far it got, so a server started after a
kill finishes it. Once done the row stays, in state ``deleted``, as the server's audit row of the deletion: who
asked, which workspace (its id and name), when it began and when it ended. The workspace's own audit log goes
with its database.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core.migrating import MigrationSet
from hangar.core.types import UtcDateTime

metadata = sa.MetaData()

DELETING = "deleting"
DELETED = "deleted"

workspace_deletions = sa.Table(
    "workspace_deletions",
    metadata,
    sa.Column("workspace_id", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("requested_by", sa.String(80), nullable=False),  # the principal's label (``user:<id>``)
    sa.Column("state", sa.String(16), nullable=False),  # DELETING, then DELETED
    sa.Column("step", sa.String(16), nullable=False),  # the last step done (``hangar.server.deletion.steps``)
    sa.Column("started_at", UtcDateTime(), nullable=False),
    sa.Column("finished_at", UtcDateTime()),
)

MIGRATIONS = MigrationSet("deletion", "server", Path(__file__).parent / "migrations", tables=(metadata,))


async def was_deleted(engine: AsyncEngine, workspace_id: str) -> bool:
    """Whether the server's record holds a deletion of ``workspace_id`` (under way or done), read now."""
    t = workspace_deletions
    async with engine.connect() as conn:
        return (await conn.scalar(sa.select(t.c.state).where(t.c.workspace_id == workspace_id))) is not None
