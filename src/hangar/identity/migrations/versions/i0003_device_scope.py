"""Device credentials narrower than their holder: limited to one workspace, to reads, to named ops, to a
deadline; issued to an agent or to an OAuth client (see ``hangar.identity.models.DeviceScope``).

Revision ID: i0003
"""

import sqlalchemy as sa
from alembic import op

from hangar.core.types import UtcDateTime

revision = "i0003"
down_revision = "i0002"
branch_labels = None
depends_on = None


COLUMNS = ("workspace_id", "read_only", "tools", "expires_at", "agent_id", "client_id")


# Plain ADD/DROP COLUMN, not a batch copy: copying the table would drop the authority triggers of i0002.
def upgrade() -> None:
    op.add_column("devices", sa.Column("workspace_id", sa.String(64)))
    op.add_column("devices", sa.Column("read_only", sa.Boolean, nullable=False, server_default=sa.false()))
    op.add_column("devices", sa.Column("tools", sa.JSON))
    op.add_column("devices", sa.Column("expires_at", UtcDateTime()))
    op.add_column("devices", sa.Column("agent_id", sa.String(36)))
    op.add_column("devices", sa.Column("client_id", sa.String(64)))


def downgrade() -> None:
    for column in reversed(COLUMNS):
        op.drop_column("devices", column)
