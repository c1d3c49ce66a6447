"""Repos record whether the server owner registered them: a workspace admin's repo is fetched under stricter rules
(no SSH identity of the server's, no loopback, private or metadata address; see ``hangar.workspace.sources``), at
every fetch and not only when it was registered. Repos recorded before this are taken as a workspace admin's: who
registered them is not known, and the owner's own keep working by registering them again.

Revision ID: w0003
"""

import sqlalchemy as sa
from alembic import op

revision = "w0003"
down_revision = "w0002"
branch_labels = None
depends_on = None


# Plain ADD/DROP COLUMN, not a batch copy: copying the table would drop triggers other revisions made.
def upgrade() -> None:
    op.add_column("repos", sa.Column("registered_by_owner", sa.Boolean, nullable=False, server_default=sa.false()))


def downgrade() -> None:
    op.drop_column("repos", "registered_by_owner")
