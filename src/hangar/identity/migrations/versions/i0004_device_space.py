"""A device credential limited to one space of its workspace: an agent run's, which works in that space (see
``hangar.identity.models.DeviceScope``).

Revision ID: i0004
"""

import sqlalchemy as sa
from alembic import op

revision = "i0004"
down_revision = "i0003"
branch_labels = None
depends_on = None


# Plain ADD/DROP COLUMN, not a batch copy: copying the table would drop the authority triggers of i0002.
def upgrade() -> None:
    op.add_column("devices", sa.Column("space_id", sa.String(64)))


def downgrade() -> None:
    op.drop_column("devices", "space_id")
