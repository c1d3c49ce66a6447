"""Rigs: the server process running each rig (``rig_sessions.server_url``), where another server relays the
rig's calls and lanes; NULL for a rig of a process that serves none (a command).

Revision ID: r0003
"""

import sqlalchemy as sa
from alembic import op

revision = "r0003"
down_revision = "r0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("rig_sessions") as batch:
        batch.add_column(sa.Column("server_url", sa.String(300), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("rig_sessions") as batch:
        batch.drop_column("server_url")
