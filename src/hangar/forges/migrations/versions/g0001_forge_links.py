"""Forges: repo links given by hand, in the workspace's database (see ``hangar.forges.tables``).

Revision ID: g0001
"""

import sqlalchemy as sa
from alembic import op

from hangar.core.types import UtcDateTime

revision = "g0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "forge_links",
        sa.Column("repo_id", sa.String(36), primary_key=True),
        sa.Column("full_name", sa.String(160), nullable=False),
        sa.Column("linked_at", UtcDateTime(), nullable=False),
        sa.Column("linked_by", sa.String(200), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("forge_links")
