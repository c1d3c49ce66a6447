"""The step queue, worker credentials and workers (see ``hangar.pipelines.queue_tables``).

Revision ID: pw0001
"""

import sqlalchemy as sa
from alembic import op

from hangar.core.types import UtcDateTime

revision = "pw0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pipeline_step_queue",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("workspace_id", sa.String(36), nullable=False),
        sa.Column("run_id", sa.String(36), nullable=False),
        sa.Column("step_id", sa.String(128), nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("body_key", sa.String(128), nullable=False),
        sa.Column("state", sa.JSON, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("worker_id", sa.String(36), nullable=True),
        sa.Column("tries", sa.Integer, nullable=False),
        sa.Column("lease_until", UtcDateTime(), nullable=True),
        sa.Column("history", sa.JSON, nullable=False),
        sa.Column("result", sa.JSON, nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("finished_at", UtcDateTime(), nullable=True),
        sa.UniqueConstraint("workspace_id", "run_id", "step_id", "attempt", name="uq_step_queue_attempt"),
    )
    # What a claim scans: the rows not done, oldest first.
    op.create_index("ix_step_queue_open", "pipeline_step_queue", ["status", "id"])
    op.create_table(
        "worker_credentials",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("revoked_at", UtcDateTime(), nullable=True),
    )
    op.create_table(
        "pipeline_workers",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("credential_id", sa.String(36), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("started_at", UtcDateTime(), nullable=False),
        sa.Column("seen_at", UtcDateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("pipeline_workers")
    op.drop_table("worker_credentials")
    op.drop_index("ix_step_queue_open", "pipeline_step_queue")
    op.drop_table("pipeline_step_queue")
