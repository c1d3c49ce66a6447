"""An index over the SCIM records still live, in listing order, so that counting matches and reading a page
never scan the representations themselves.

Revision ID: s0003
"""

from alembic import op

revision = "s0003"
down_revision = "s0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_scim_users_live", "scim_users", ["deleted_at", "created_at", "user_id"])


def downgrade() -> None:
    op.drop_index("ix_scim_users_live", "scim_users")
