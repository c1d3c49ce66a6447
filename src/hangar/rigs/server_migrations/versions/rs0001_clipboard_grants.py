"""Rigs, server database: each person's clipboard grants per direction (``rig_clipboard_grants``).

Revision ID: rs0001
"""

import sqlalchemy as sa
from alembic import op

from hangar.core.types import UtcDateTime

revision = "rs0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rig_clipboard_grants",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("user_id", sa.String(36), nullable=False),
        sa.Column("direction", sa.String(16), nullable=False),
        sa.Column("granted_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=True),
        sa.Column("revoked_at", UtcDateTime(), nullable=True),
        sa.Column("revoked_by", sa.String(36), nullable=True),
    )
    op.create_index("ix_rig_clipboard_grants_user", "rig_clipboard_grants", ["user_id", "direction"])


def downgrade() -> None:
    op.drop_index("ix_rig_clipboard_grants_user", "rig_clipboard_grants")
    op.drop_table("rig_clipboard_grants")
