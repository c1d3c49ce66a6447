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

from hangar.core.db import MigrationSet
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
