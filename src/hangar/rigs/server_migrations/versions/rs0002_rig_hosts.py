"""Rigs, server database: rig host credentials and the rigs placed on rig hosts (``hangar.rigs.hosts.tables``).

Revision ID: rs0002
"""

import sqlalchemy as sa
from alembic import op

from hangar.core.types import UtcDateTime

revision = "rs0002"
down_revision = "rs0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rig_host_credentials",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("revoked_at", UtcDateTime(), nullable=True),
    )
    op.create_table(
        "rig_placements",
        sa.Column("rig_id", sa.String(36), primary_key=True),
        sa.Column("workspace_id", sa.String(36), nullable=False),
        sa.Column("host_id", sa.String(36), nullable=False),
        sa.Column("memory_mb", sa.Integer, nullable=False),
        sa.Column("placed_at", UtcDateTime(), nullable=False),
        sa.Column("ended_at", UtcDateTime(), nullable=True),
    )
    op.create_index("ix_rig_placements_open", "rig_placements", ["host_id", "ended_at"])


def downgrade() -> None:
    op.drop_index("ix_rig_placements_open", "rig_placements")
    op.drop_table("rig_placements")
    op.drop_table("rig_host_credentials")
