"""Chat bridge: an inbound event is kept until it is handled (at-least-once): who took it, until when its claim
stands, when it was handled, and the event itself for a process that takes over to handle it.

Rows from before were recorded as their events were taken: they count as handled.

Revision ID: c0004
Revises: c0003
"""

import sqlalchemy as sa
from alembic import op

revision = "c0004"
down_revision = "c0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("chat_inbound_seen") as batch:
        batch.add_column(sa.Column("holder", sa.String(80), nullable=True))
        batch.add_column(sa.Column("claimed_until", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("handled_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("event", sa.Text(), nullable=True))
    op.execute("UPDATE chat_inbound_seen SET handled_at = seen_at")


def downgrade() -> None:
    with op.batch_alter_table("chat_inbound_seen") as batch:
        batch.drop_column("event")
        batch.drop_column("handled_at")
        batch.drop_column("claimed_until")
        batch.drop_column("holder")
