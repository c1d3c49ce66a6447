"""Agent runs record the process driving them, so a second process on the same data directory (a command
such as ``hangar pipeline run`` beside the server) never closes runs that are alive elsewhere.

Revision ID: a0002
"""

import sqlalchemy as sa
from alembic import op

revision = "a0002"
down_revision = "a0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agent_runs") as batch:
        batch.add_column(sa.Column("owner", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agent_runs") as batch:
        batch.drop_column("owner")
