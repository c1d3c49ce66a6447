"""Server-database tables owned by identity (schema in ``identity/migrations``)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from hangar.core import outbox
from hangar.core.migrating import MigrationSet
from hangar.core.types import UtcDateTime

metadata = sa.MetaData()

users = sa.Table(
    "users",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("email", sa.String(320)),
    sa.Column("display_name", sa.String(200), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("deactivated_at", UtcDateTime()),
    sa.Column("sso_issuer", sa.String(500)),
    sa.Column("sso_subject", sa.String(500)),
)

workspaces = sa.Table(
    "workspaces",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("created_by", sa.String(36), nullable=False),
)

memberships = sa.Table(
    "memberships",
    metadata,
    sa.Column("workspace_id", sa.String(36), primary_key=True),
    sa.Column("user_id", sa.String(36), primary_key=True),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
)

devices = sa.Table(
    "devices",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("user_id", sa.String(36), nullable=False),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("token_hash", sa.String(64), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("last_used_at", UtcDateTime(), nullable=False),
    sa.Column("revoked_at", UtcDateTime()),
    # A credential narrower than its holder (``DeviceScope``); all empty for a person's own devices.
    sa.Column("workspace_id", sa.String(64)),
    sa.Column("read_only", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("tools", sa.JSON),
    sa.Column("expires_at", UtcDateTime()),
    sa.Column("agent_id", sa.String(36)),
    sa.Column("client_id", sa.String(64)),
    sa.Column("space_id", sa.String(64)),
    # A worker's agent credential: "<worker credential> <agent run> <try key>" it was minted for (unique).
    sa.Column("minted_for", sa.String(500)),
    sa.Index("devices_minted_for", "minted_for", unique=True),
)

pairing_codes = sa.Table(
    "pairing_codes",
    metadata,
    sa.Column("code_hash", sa.String(64), primary_key=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("workspace_id", sa.String(36)),
    sa.Column("role", sa.String(16)),
    sa.Column("user_id", sa.String(36)),
    sa.Column("created_by", sa.String(36), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("expires_at", UtcDateTime(), nullable=False),
    sa.Column("used_at", UtcDateTime()),
    sa.Column("used_by", sa.String(36)),
)

server_settings = sa.Table(
    "server_settings",
    metadata,
    sa.Column("key", sa.String(128), primary_key=True),
    sa.Column("value", sa.JSON, nullable=False),
)

MIGRATIONS = MigrationSet(
    "identity", "server", Path(__file__).parent / "migrations", tables=(metadata, outbox.metadata)
)
