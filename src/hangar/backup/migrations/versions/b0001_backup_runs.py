"""Scheduled backups: one row per attempt (see ``hangar.backup.tables``).

Revision ID: b0001
"""

import sqlalchemy as sa
from alembic import op

from hangar.core.types import UtcDateTime

revision = "b0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "backup_runs",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("started_at", UtcDateTime(), nullable=False),
        sa.Column("finished_at", UtcDateTime(), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("file", sa.Text, nullable=False),
        sa.Column("size", sa.BigInteger, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
    )
    op.create_index("ix_backup_runs_started", "backup_runs", ["started_at"])


def downgrade() -> None:
    op.drop_index("ix_backup_runs_started", "backup_runs")
    op.drop_table("backup_runs")
