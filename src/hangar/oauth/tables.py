"""Server-database tables of the OAuth authorization server (schema in ``oauth/migrations``).

Nothing secret is stored in the clear: client secrets, authorization codes, refresh tokens and the
browser-binding cookies of pending requests are kept as SHA-256 digests of high-entropy values.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from hangar.core.migrating import MigrationSet
from hangar.core.types import UtcDateTime

metadata = sa.MetaData()

# Clients registered dynamically (RFC 7591).
clients = sa.Table(
    "oauth_clients",
    metadata,
    sa.Column("client_id", sa.String(64), primary_key=True),
    sa.Column("secret_hash", sa.String(64)),  # None for a public client (token_endpoint_auth_method "none")
    sa.Column("auth_method", sa.String(32), nullable=False),
    sa.Column("client_name", sa.String(200), nullable=False),
    sa.Column("redirect_uris", sa.JSON, nullable=False),
    sa.Column("grant_types", sa.JSON, nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("authorized_at", UtcDateTime()),  # the last time a person approved it; None: never
)

# Authorization requests waiting for the person: signed in (user_id) or not yet.
requests = sa.Table(
    "oauth_requests",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("client_id", sa.String(64), nullable=False),
    sa.Column("redirect_uri", sa.Text, nullable=False),
    sa.Column("state", sa.Text),
    sa.Column("code_challenge", sa.String(128), nullable=False),
    sa.Column("resource", sa.Text),
    sa.Column("binding_hash", sa.String(64), nullable=False),  # the browser that started it (a cookie)
    sa.Column("user_id", sa.String(36)),
    sa.Column("signed_in_with", sa.String(16)),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("expires_at", UtcDateTime(), nullable=False),
)

# Authorization codes: single use, short-lived, bound to everything the token request must repeat.
codes = sa.Table(
    "oauth_codes",
    metadata,
    sa.Column("code_hash", sa.String(64), primary_key=True),
    sa.Column("client_id", sa.String(64), nullable=False),
    sa.Column("redirect_uri", sa.Text, nullable=False),
    sa.Column("code_challenge", sa.String(128), nullable=False),
    sa.Column("resource", sa.Text),
    sa.Column("user_id", sa.String(36), nullable=False),
    sa.Column("workspace_id", sa.String(64)),  # None: all the person's workspaces
    sa.Column("read_only", sa.Boolean, nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("expires_at", UtcDateTime(), nullable=False),
    sa.Column("used_at", UtcDateTime()),
    sa.Column("grant_id", sa.String(36)),  # what the code was exchanged for (revoked if it comes back)
    sa.Column("reused_at", UtcDateTime()),  # it came back: whatever it was exchanged for is revoked
)

# A grant: one consent of one person for one client, held as one device credential (the access token).
grants = sa.Table(
    "oauth_grants",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("client_id", sa.String(64), nullable=False),
    sa.Column("user_id", sa.String(36), nullable=False),
    sa.Column("device_id", sa.String(36), nullable=False),
    sa.Column("workspace_id", sa.String(64)),
    sa.Column("read_only", sa.Boolean, nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("revoked_at", UtcDateTime()),
)

# Refresh tokens of a grant: every use replaces the token, and a used one presented again revokes the grant.
refresh_tokens = sa.Table(
    "oauth_refresh_tokens",
    metadata,
    sa.Column("token_hash", sa.String(64), primary_key=True),
    sa.Column("grant_id", sa.String(36), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("expires_at", UtcDateTime(), nullable=False),
    sa.Column("used_at", UtcDateTime()),
)

MIGRATIONS = MigrationSet("oauth", "server", Path(__file__).parent / "migrations", tables=(metadata,))
