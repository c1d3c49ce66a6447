"""Chat bridge: outstanding link codes, in the workspace's database so any server process redeems them.

Revision ID: c0003
Revises: c0002
"""

import sqlalchemy as sa
from alembic import op

revision = "c0003"
down_revision = "c0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "chat_link_codes",
        sa.Column("code_hash", sa.String(64), primary_key=True),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("user_id", sa.String(36), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ux_chat_link_codes_member", "chat_link_codes", ["provider", "user_id"], unique=True)


def downgrade() -> None:
    op.drop_table("chat_link_codes")
