"""The OAuth 2.1 authorization server: registered clients, pending authorization requests, authorization
codes, grants and their refresh tokens (see ``hangar.oauth.tables``).

Revision ID: o0001
"""

import sqlalchemy as sa
from alembic import op

from hangar.core.types import UtcDateTime

revision = "o0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "oauth_clients",
        sa.Column("client_id", sa.String(64), primary_key=True),
        sa.Column("secret_hash", sa.String(64), nullable=True),
        sa.Column("auth_method", sa.String(32), nullable=False),
        sa.Column("client_name", sa.String(200), nullable=False),
        sa.Column("redirect_uris", sa.JSON, nullable=False),
        sa.Column("grant_types", sa.JSON, nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("authorized_at", UtcDateTime(), nullable=True),
    )
    op.create_index("ix_oauth_clients_created", "oauth_clients", ["created_at"])
    op.create_table(
        "oauth_requests",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("client_id", sa.String(64), nullable=False),
        sa.Column("redirect_uri", sa.Text, nullable=False),
        sa.Column("state", sa.Text, nullable=True),
        sa.Column("code_challenge", sa.String(128), nullable=False),
        sa.Column("resource", sa.Text, nullable=True),
        sa.Column("binding_hash", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(36), nullable=True),
        sa.Column("signed_in_with", sa.String(16), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
    )
    op.create_index("ix_oauth_requests_expires", "oauth_requests", ["expires_at"])
    op.create_index("ix_oauth_requests_created", "oauth_requests", ["created_at"])
    op.create_table(
        "oauth_codes",
        sa.Column("code_hash", sa.String(64), primary_key=True),
        sa.Column("client_id", sa.String(64), nullable=False),
        sa.Column("redirect_uri", sa.Text, nullable=False),
        sa.Column("code_challenge", sa.String(128), nullable=False),
        sa.Column("resource", sa.Text, nullable=True),
        sa.Column("user_id", sa.String(36), nullable=False),
        sa.Column("workspace_id", sa.String(64), nullable=True),
        sa.Column("read_only", sa.Boolean, nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("used_at", UtcDateTime(), nullable=True),
        sa.Column("grant_id", sa.String(36), nullable=True),
        sa.Column("reused_at", UtcDateTime(), nullable=True),
    )
    op.create_index("ix_oauth_codes_expires", "oauth_codes", ["expires_at"])
    op.create_table(
        "oauth_grants",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("client_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(36), nullable=False),
        sa.Column("device_id", sa.String(36), nullable=False),
        sa.Column("workspace_id", sa.String(64), nullable=True),
        sa.Column("read_only", sa.Boolean, nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("revoked_at", UtcDateTime(), nullable=True),
    )
    op.create_index("ix_oauth_grants_device", "oauth_grants", ["device_id"])
    op.create_table(
        "oauth_refresh_tokens",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column("grant_id", sa.String(36), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("used_at", UtcDateTime(), nullable=True),
    )
    op.create_index("ix_oauth_refresh_tokens_grant", "oauth_refresh_tokens", ["grant_id"])


def downgrade() -> None:
    for table in ("oauth_refresh_tokens", "oauth_grants", "oauth_codes", "oauth_requests", "oauth_clients"):
        op.drop_table(table)
