"""Orchestrations: a ticket's work DAG, approvals, runs, sub-ticket outputs and deliverable.

Revision ID: a0006
"""

import sqlalchemy as sa
from alembic import op

revision = "a0006"
down_revision = "a0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "orchestrations",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("ticket_id", sa.String(36), nullable=False, unique=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("agent_id", sa.String(36), nullable=False),
        sa.Column("planner_agent_id", sa.String(36), nullable=False),
        sa.Column("synthesis_agent_id", sa.String(36), nullable=False),
        sa.Column("repo_ids", sa.JSON, nullable=False),
        sa.Column("dag", sa.JSON, nullable=False),
        sa.Column("approved", sa.JSON, nullable=False),
        sa.Column("outputs", sa.JSON, nullable=False),
        sa.Column("plan_run_id", sa.String(36), nullable=True),
        sa.Column("work_run_id", sa.String(36), nullable=True),
        sa.Column("space_id", sa.String(36), nullable=True),
        sa.Column("deliverable", sa.Text, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("orchestrations")
