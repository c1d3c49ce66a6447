"""The forges part's workspace table (schema in ``forges/migrations``, revisions ``g…``): ``forge_links``, one row per
workspace repo linked to its forge repository by hand (``forge.linkRepo``). In the workspace's database, written
through its write transactions, so every server process sharing the data directory reads the current links and two
links made at once by two processes are both kept."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from hangar.core.migrating import MigrationSet
from hangar.core.types import UtcDateTime

metadata = sa.MetaData()

forge_links = sa.Table(
    "forge_links",
    metadata,
    sa.Column("repo_id", sa.String(36), primary_key=True),
    sa.Column("full_name", sa.String(160), nullable=False),  # owner/name on the forge
    sa.Column("linked_at", UtcDateTime(), nullable=False),
    sa.Column("linked_by", sa.String(200), nullable=False),
)

MIGRATIONS = MigrationSet("forges", "workspace", Path(__file__).parent / "migrations", tables=(metadata,))
