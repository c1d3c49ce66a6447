"""Forges: a webhook delivery also records the SHA-256 of its signed body, so a body replayed under a new
delivery id is recognised. Deliveries recorded before this have none (they age out within seven days).

Revision ID: g0003
"""

import sqlalchemy as sa
from alembic import op

revision = "g0003"
down_revision = "g0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("forge_deliveries", sa.Column("body_sha256", sa.String(64), nullable=True))
    op.create_index("ix_forge_deliveries_body", "forge_deliveries", ["body_sha256"])


def downgrade() -> None:
    op.drop_index("ix_forge_deliveries_body", "forge_deliveries")
    op.drop_column("forge_deliveries", "body_sha256")
