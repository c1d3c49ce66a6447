"""The retention part's server table: one row per database a retention pass pruned (``hangar.retention.schedule``),
the server's record of what each pass deleted and, for a database it could not prune, why."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from hangar.core.migrating import MigrationSet
from hangar.core.types import UtcDateTime

metadata = sa.MetaData()

retention_runs = sa.Table(
    "retention_runs",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("pass_id", sa.String(36), nullable=False),
    sa.Column("started_at", UtcDateTime(), nullable=False),
    sa.Column("finished_at", UtcDateTime(), nullable=True),  # null: the pass is under way (or its process died)
    sa.Column("database", sa.String(64), nullable=False),  # "server" or a workspace id
    sa.Column("events", sa.Integer, nullable=False),
    sa.Column("audit", sa.Integer, nullable=False),
    sa.Column("error", sa.Text, nullable=True),
)

MIGRATIONS = MigrationSet("retention", "server", Path(__file__).parent / "migrations", tables=(metadata,))
