"""The rig hosts' server tables (schema in ``rigs/server_migrations``):

rig_host_credentials  one row per credential an admin minted for a ``hangar rig-host``: its name, the hash of its
                      secret, revocation (``hangar.core.hostcreds``), and its limits: the most memory its host may
                      say it has, and the workspaces whose rigs it may run (null: every one)
rig_placements        one row per rig placed on a rig host: the rig, its workspace, the host's credential, the
                      memory it was given, when placed and when it ended; what every server counts against a
                      host's budget
"""

from __future__ import annotations

import sqlalchemy as sa

from hangar.core.hostcreds import credential_table
from hangar.core.types import UtcDateTime

metadata = sa.MetaData()

# What ``hangar admin rig-host-credential create`` gives a credential without --max-memory-budget, and what rows
# minted before the maximum existed hold (the migration's default): the budget a rig host says by default.
DEFAULT_MAX_BUDGET_MB = 12 * 1024

rig_host_credentials = credential_table(
    "rig_host_credentials",
    metadata,
    sa.Column("max_budget_mb", sa.Integer, nullable=False, server_default=str(DEFAULT_MAX_BUDGET_MB)),
    sa.Column("workspace_ids", sa.JSON, nullable=True),  # a list of workspace ids; null: every workspace
)

rig_placements = sa.Table(
    "rig_placements",
    metadata,
    sa.Column("rig_id", sa.String(36), primary_key=True),
    sa.Column("workspace_id", sa.String(36), nullable=False),
    sa.Column("host_id", sa.String(36), nullable=False),  # rig_host_credentials.id
    sa.Column("memory_mb", sa.Integer, nullable=False),
    sa.Column("placed_at", UtcDateTime(), nullable=False),
    sa.Column("ended_at", UtcDateTime(), nullable=True),
    sa.Index("ix_rig_placements_open", "host_id", "ended_at"),
)
