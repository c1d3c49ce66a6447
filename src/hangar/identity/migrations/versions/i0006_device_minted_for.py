"""What a worker's agent credential was minted for: the worker credential that asked, the agent run and the step's
try (``hangar.agents.worker_grants``). A renewal or a revocation must name the same, so a credential of one run
is never revived for another, nor revoked by another worker; unique, so a try's run gets one credential.

Revision ID: i0006
"""

import sqlalchemy as sa
from alembic import op

revision = "i0006"
down_revision = "i0005"
branch_labels = None
depends_on = None


# Plain ADD/DROP COLUMN, not a batch copy: copying the table would drop the authority triggers of i0002.
def upgrade() -> None:
    op.add_column("devices", sa.Column("minted_for", sa.String(500)))
    op.create_index("devices_minted_for", "devices", ["minted_for"], unique=True)


def downgrade() -> None:
    op.drop_index("devices_minted_for", table_name="devices")
    op.drop_column("devices", "minted_for")
