"""SCIM's view of users: the provisioned representation, the case-folded userName that must be unique, the
external id, a version for ETags, and a soft-delete mark (a deleted user stays deactivated in ``users``).

Revision ID: s0002
"""

import sqlalchemy as sa
from alembic import op

revision = "s0002"
down_revision = "s0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "scim_users",
        sa.Column("user_id", sa.String(36), primary_key=True),
        sa.Column("user_name", sa.String(320), nullable=False),
        # NULL once deleted, so the name can be provisioned again.
        sa.Column("user_name_lc", sa.String(320), nullable=True, unique=True),
        sa.Column("external_id", sa.String(320), nullable=True, index=True),
        sa.Column("resource", sa.JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, index=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("scim_users")
