"""Agent runs remember the sequence number of their first event, so reading a run's events starts there.

Revision ID: a0003
"""

import sqlalchemy as sa
from alembic import op

revision = "a0003"
down_revision = "a0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agent_runs") as batch:
        batch.add_column(sa.Column("first_seq", sa.Integer, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agent_runs") as batch:
        batch.drop_column("first_seq")
