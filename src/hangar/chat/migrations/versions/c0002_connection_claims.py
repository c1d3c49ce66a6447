"""Chat bridge: which server process holds each connection (a lease), and the inbound events already handled.

Revision ID: c0002
Revises: c0001
"""

import sqlalchemy as sa
from alembic import op

revision = "c0002"
down_revision = "c0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "chat_connection_claims",
        sa.Column("provider", sa.String(32), primary_key=True),
        sa.Column("holder", sa.String(128), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("renewed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("streaming_available", sa.Boolean, nullable=False),
    )
    op.create_table(
        "chat_inbound_seen",
        sa.Column("provider", sa.String(32), primary_key=True),
        sa.Column("event_key", sa.String(128), primary_key=True),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_chat_inbound_seen_at", "chat_inbound_seen", ["seen_at"])


def downgrade() -> None:
    op.drop_table("chat_inbound_seen")
    op.drop_table("chat_connection_claims")
