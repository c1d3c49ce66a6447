"""Rigs, server database: a rig host credential's limits, set when it is minted: the most memory its host may say
it has (``max_budget_mb``; rows minted before this get 12288 MB, the budget a rig host says by default) and the
workspaces whose rigs it may run (``workspace_ids``; null, as on earlier rows: every workspace).

Revision ID: rs0003
"""

import sqlalchemy as sa
from alembic import op

revision = "rs0003"
down_revision = "rs0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "rig_host_credentials", sa.Column("max_budget_mb", sa.Integer, nullable=False, server_default="12288")
    )
    op.add_column("rig_host_credentials", sa.Column("workspace_ids", sa.JSON, nullable=True))


def downgrade() -> None:
    op.drop_column("rig_host_credentials", "workspace_ids")
    op.drop_column("rig_host_credentials", "max_budget_mb")
