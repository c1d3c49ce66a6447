"""Retention passes: one row per database a pass pruned (see ``hangar.retention.tables``).

Revision ID: t0001
"""

import sqlalchemy as sa
from alembic import op

from hangar.core.types import UtcDateTime

revision = "t0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "retention_runs",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("pass_id", sa.String(36), nullable=False),
        sa.Column("started_at", UtcDateTime(), nullable=False),
        sa.Column("finished_at", UtcDateTime(), nullable=True),
        sa.Column("database", sa.String(64), nullable=False),
        sa.Column("events", sa.Integer, nullable=False),
        sa.Column("audit", sa.Integer, nullable=False),
        sa.Column("error", sa.Text, nullable=True),
    )
    op.create_index("ix_retention_runs_started", "retention_runs", ["started_at"])


def downgrade() -> None:
    op.drop_index("ix_retention_runs_started", "retention_runs")
    op.drop_table("retention_runs")
