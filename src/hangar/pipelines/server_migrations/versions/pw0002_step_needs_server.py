"""Pipelines, server database: whether a queued step needs a worker started with ``--server`` (its body reads
files that lie with a server, or it is a shell step naming ``repoIds``, whose forge token a server mints). Rows
queued before this need none.

Revision ID: pw0002
"""

import sqlalchemy as sa
from alembic import op

revision = "pw0002"
down_revision = "pw0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "pipeline_step_queue", sa.Column("needs_server", sa.Boolean, nullable=False, server_default=sa.false())
    )


def downgrade() -> None:
    op.drop_column("pipeline_step_queue", "needs_server")
