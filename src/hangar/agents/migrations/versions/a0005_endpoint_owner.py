"""Agents record whether the server owner configured their model endpoint: a workspace admin's endpoint reaches
only public addresses, or a host the server owner names (``hangar.agents.endpoints``), checked at every turn and
not only when saved. Agents recorded before this are taken as a workspace admin's: who configured them is not
known, and taking an admin's for the owner's would leave the hole open for every agent made before the fix. The
owner's own keep working once the owner saves their adapter again, or names their model's host
(``hangar admin trusted-model-hosts``); until then a turn refused says so.

Revision ID: a0005
"""

import sqlalchemy as sa
from alembic import op

revision = "a0005"
down_revision = "a0004"
branch_labels = None
depends_on = None


# Plain ADD/DROP COLUMN, not a batch copy: copying the table would drop the change-counter triggers of a0004.
def upgrade() -> None:
    op.add_column("agents", sa.Column("endpoint_by_owner", sa.Boolean, nullable=False, server_default=sa.false()))


def downgrade() -> None:
    op.drop_column("agents", "endpoint_by_owner")
