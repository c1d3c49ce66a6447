"""Server identity tables: users, workspaces, memberships, devices, pairing codes, server settings.

Revision ID: i0001
"""

import sqlalchemy as sa
from alembic import op

revision = "i0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("email", sa.String(320), nullable=True),
        sa.Column("display_name", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deactivated_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("sso_issuer", sa.String(500), nullable=True),
        sa.Column("sso_subject", sa.String(500), nullable=True),
    )
    op.create_index("ix_users_email", "users", [sa.text("lower(email)")])
    # The provider-subject pin: one user per (issuer, subject), only where a subject is set.
    op.create_index(
        "uq_users_sso_pin",
        "users",
        ["sso_issuer", "sso_subject"],
        unique=True,
        sqlite_where=sa.text("sso_subject IS NOT NULL"),
        postgresql_where=sa.text("sso_subject IS NOT NULL"),
    )
    op.create_table(
        "workspaces",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(36), nullable=False),
    )
    op.create_table(
        "memberships",
        sa.Column(
            "workspace_id",
            sa.String(36),
            sa.ForeignKey("workspaces.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_memberships_user", "memberships", ["user_id"])
    op.create_table(
        "devices",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_devices_user", "devices", ["user_id"])
    op.create_table(
        "pairing_codes",
        sa.Column("code_hash", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("workspace_id", sa.String(36), nullable=True),
        sa.Column("role", sa.String(16), nullable=True),
        sa.Column("user_id", sa.String(36), nullable=True),
        sa.Column("created_by", sa.String(36), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("used_by", sa.String(36), nullable=True),
    )
    op.create_table(
        "server_settings",
        sa.Column("key", sa.String(128), primary_key=True),
        sa.Column("value", sa.JSON, nullable=False),
    )


def downgrade() -> None:
    for name in ("server_settings", "pairing_codes", "devices", "memberships", "workspaces", "users"):
        op.drop_table(name)
