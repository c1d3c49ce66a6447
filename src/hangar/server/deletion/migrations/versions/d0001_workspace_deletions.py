"""Workspace deletions: one row per deleted workspace, the deletion's progress and then its audit row (see
``hangar.server.deletion.tables``).

Revision ID: d0001
"""

import sqlalchemy as sa
from alembic import op

from hangar.core.types import UtcDateTime

revision = "d0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "workspace_deletions",
        sa.Column("workspace_id", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("requested_by", sa.String(80), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("step", sa.String(16), nullable=False),
        sa.Column("started_at", UtcDateTime(), nullable=False),
        sa.Column("finished_at", UtcDateTime()),
    )


def downgrade() -> None:
    op.drop_table("workspace_deletions")
