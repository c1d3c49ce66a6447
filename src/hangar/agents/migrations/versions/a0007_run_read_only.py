"""Agent runs record whether their space's folder is theirs to read only (a reviewer's checkout): the enclosure of a
command agent's program mounts it read-only, and the run is offered no op that changes anything. Runs recorded
before this were not read-only.

Revision ID: a0007
"""

import sqlalchemy as sa
from alembic import op

revision = "a0007"
down_revision = "a0006"
branch_labels = None
depends_on = None


# Plain ADD/DROP COLUMN, not a batch copy: copying the table would drop the change-counter triggers of a0004.
def upgrade() -> None:
    op.add_column("agent_runs", sa.Column("read_only", sa.Boolean, nullable=False, server_default=sa.false()))


def downgrade() -> None:
    op.drop_column("agent_runs", "read_only")
