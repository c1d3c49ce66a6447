"""Workspace tables owned by the chat part (schema in ``chat/migrations``, revisions ``c…``).

``chat_space_links``: one external conversation (a channel thread, or a whole bot DM) to one space, deleted with
the space. ``chat_user_links``: one external member to one user (identity resolution, not an access grant).
``chat_open_streams``: streamed replies not finished yet, so a restarted server can finish their cards.

The references to ``spaces(id)`` (``ON DELETE CASCADE``) are made by the migration, in the database: the
workspace part declares ``spaces`` in its own metadata, which these definitions (used for queries and the schema
check) do not share.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from hangar.core.migrating import MigrationSet
from hangar.core.types import UtcDateTime

metadata = sa.MetaData()

chat_space_links = sa.Table(
    "chat_space_links",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("workspace_id", sa.String(64), nullable=False),
    sa.Column("provider", sa.String(32), nullable=False),
    sa.Column("external_team_id", sa.String(64), nullable=False),
    sa.Column("external_channel_id", sa.String(64), nullable=False),
    sa.Column("external_thread_id", sa.String(64), nullable=True),
    sa.Column("cc_space_id", sa.String(36), nullable=False),
    sa.Column("created_by_user_id", sa.String(36), nullable=True),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("last_activity_at", UtcDateTime(), nullable=False),
)

chat_user_links = sa.Table(
    "chat_user_links",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("workspace_id", sa.String(64), nullable=False),
    sa.Column("provider", sa.String(32), nullable=False),
    sa.Column("external_team_id", sa.String(64), nullable=False),
    sa.Column("external_user_id", sa.String(64), nullable=False),
    sa.Column("user_id", sa.String(36), nullable=False),
    sa.Column("method", sa.String(16), nullable=False),
    sa.Column("linked_at", UtcDateTime(), nullable=False),
)

chat_open_streams = sa.Table(
    "chat_open_streams",
    metadata,
    sa.Column("space_id", sa.String(36), primary_key=True),
    sa.Column("provider", sa.String(32), nullable=False),
    sa.Column("channel", sa.String(64), nullable=False),
    sa.Column("ts", sa.String(64), nullable=False),
    sa.Column("run_id", sa.String(36), nullable=True),
    sa.Column("card", sa.JSON, nullable=False),
    sa.Column("started_at", UtcDateTime(), nullable=False),
)

MIGRATIONS = MigrationSet("chat", "workspace", Path(__file__).parent / "migrations", tables=(metadata,))

# One row per connection a workspace wants (credentials stored): the server process holding it until
# ``expires_at`` (a lease it renews), what it last said of the connection, and a generation another process bumps
# to make the holder dial again with new credentials.
chat_connection_claims = sa.Table(
    "chat_connection_claims",
    metadata,
    sa.Column("provider", sa.String(32), primary_key=True),
    sa.Column("holder", sa.String(128), nullable=False),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("claimed_at", UtcDateTime(), nullable=False),
    sa.Column("renewed_at", UtcDateTime(), nullable=False),
    sa.Column("expires_at", UtcDateTime(), nullable=False),
    sa.Column("generation", sa.Integer, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("streaming_available", sa.Boolean, nullable=False),
)

# The inbound events (a provider's event id, a slash command's envelope id) some process has taken to handle,
# kept until handled: one handler at a time, a copy of a handled one dropped, an orphan handled by the next holder.
chat_inbound_seen = sa.Table(
    "chat_inbound_seen",
    metadata,
    sa.Column("provider", sa.String(32), primary_key=True),
    sa.Column("event_key", sa.String(128), primary_key=True),
    sa.Column("seen_at", UtcDateTime(), nullable=False),
    # At-least-once (``hangar.chat.claims.InboundSeen``): the process handling the event and until when its claim
    # stands, when it was handled (NULL: not yet), and the event itself for a process that takes over.
    sa.Column("holder", sa.String(80), nullable=True),
    sa.Column("claimed_until", UtcDateTime(), nullable=True),
    sa.Column("handled_at", UtcDateTime(), nullable=True),
    sa.Column("event", sa.Text(), nullable=True),
    sa.Index("ix_chat_inbound_seen_at", "seen_at"),
)

# The outstanding link codes, by the SHA-256 of the code (a code is a secret: a reader of the database or of a
# backup learns none that still works). One per member and provider: minting again replaces it.
chat_link_codes = sa.Table(
    "chat_link_codes",
    metadata,
    sa.Column("code_hash", sa.String(64), primary_key=True),
    sa.Column("provider", sa.String(32), nullable=False),
    sa.Column("user_id", sa.String(36), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("expires_at", UtcDateTime(), nullable=False),
    sa.Index("ux_chat_link_codes_member", "provider", "user_id", unique=True),
)
