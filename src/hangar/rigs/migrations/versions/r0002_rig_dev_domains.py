"""Rigs: dev domains (``rig_dev_domains``), one row per domain of the workspace mapped to a rig's guest port.

Revision ID: r0002
"""

import sqlalchemy as sa
from alembic import op

revision = "r0002"
down_revision = "r0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rig_dev_domains",
        sa.Column("domain", sa.String(253), primary_key=True),
        sa.Column("space_id", sa.String(64), nullable=False, index=True),
        sa.Column("rig_id", sa.String(36), nullable=False),
        sa.Column("guest_port", sa.Integer, nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("rig_dev_domains")
