"""The backup part's server table: one row per scheduled backup, kept as the server's record of each attempt
(a failure says why; the file named is the one it meant to write)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from hangar.core.migrating import MigrationSet
from hangar.core.types import UtcDateTime

metadata = sa.MetaData()

backup_runs = sa.Table(
    "backup_runs",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("started_at", UtcDateTime(), nullable=False),
    sa.Column("finished_at", UtcDateTime(), nullable=False),
    sa.Column("outcome", sa.String(16), nullable=False),  # "ok" or "failed"
    sa.Column("file", sa.Text, nullable=False),
    sa.Column("size", sa.BigInteger, nullable=True),
    sa.Column("error", sa.Text, nullable=True),
)

MIGRATIONS = MigrationSet("backup", "server", Path(__file__).parent / "migrations", tables=(metadata,))
