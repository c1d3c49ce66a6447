"""Forges: pull requests (their space and what the forge said last) and webhook deliveries received.

Revision ID: g0002
"""

import sqlalchemy as sa
from alembic import op

from hangar.core.types import UtcDateTime

revision = "g0002"
down_revision = "g0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "forge_pull_requests",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("repo_id", sa.String(36), nullable=False),
        sa.Column("full_name", sa.String(160), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("space_id", sa.String(36), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("author", sa.String(100), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("facts", sa.JSON(), nullable=False),
        sa.Column("opened_at", UtcDateTime(), nullable=False),
        sa.Column("synced_at", UtcDateTime(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.UniqueConstraint("repo_id", "number", name="uq_forge_pull_requests_repo_number"),
    )
    op.create_table(
        "forge_deliveries",
        sa.Column("delivery_id", sa.String(100), primary_key=True),
        sa.Column("event", sa.String(64), nullable=False),
        sa.Column("received_at", UtcDateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("forge_deliveries")
    op.drop_table("forge_pull_requests")
