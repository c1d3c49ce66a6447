"""SCIM's view of users: the provisioned representation, the case-folded userName that must be unique, the
external id, a version for ETags, and a soft-delete mark (a deleted user stays deactivated in ``users``); and
``scim_values``, every leaf value of every representation (one row per value, numbered by element for
multi-valued attributes), indexed so that filters run as index lookups instead of parsing JSON per user.

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

    op.create_table(
        "scim_values",
        sa.Column("user_id", sa.String(36), nullable=False),
        sa.Column("path", sa.String(400), nullable=False),
        sa.Column("elem", sa.Integer, nullable=False),
        sa.Column("text", sa.Text, nullable=True),
        sa.Column("text_lc", sa.Text, nullable=True),
        sa.Column("num", sa.Float, nullable=True),
    )
    op.create_index("ix_scim_values_text", "scim_values", ["path", "text_lc"])
    op.create_index("ix_scim_values_exact", "scim_values", ["path", "text"])
    op.create_index("ix_scim_values_num", "scim_values", ["path", "num"])
    op.create_index("ix_scim_values_user", "scim_values", ["user_id", "path", "elem"])


def downgrade() -> None:
    op.drop_table("scim_values")
    op.drop_table("scim_users")
