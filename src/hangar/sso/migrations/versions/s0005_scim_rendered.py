"""``scim_users.rendered``: the JSON text of the part of a User's representation that only SCIM writes change,
kept with the record so that a page of users is joined from texts (``scim.render``). Existing records start
without it (NULL) and are rendered from their representation until the directory fills it in.

Revision ID: s0005
"""

import sqlalchemy as sa
from alembic import op

revision = "s0005"
down_revision = "s0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("scim_users", sa.Column("rendered", sa.Text, nullable=True))


def downgrade() -> None:
    op.drop_column("scim_users", "rendered")
