"""Chat bridge: space links, user links, open streams.

SQLite treats NULLs as distinct in a unique index, so the whole-conversation anchors (a bot DM, thread id null)
get a partial unique index of their own.

Revision ID: c0001
"""

import sqlalchemy as sa
from alembic import op

revision = "c0001"
down_revision = None
branch_labels = None
depends_on = None

_WHOLE_CONVERSATION = sa.text("external_thread_id IS NULL")


def upgrade() -> None:
    op.create_table(
        "chat_space_links",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("workspace_id", sa.String(64), nullable=False),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("external_team_id", sa.String(64), nullable=False),
        sa.Column("external_channel_id", sa.String(64), nullable=False),
        sa.Column("external_thread_id", sa.String(64), nullable=True),
        sa.Column("cc_space_id", sa.String(36), sa.ForeignKey("spaces.id", ondelete="CASCADE"), nullable=False),
        sa.Column("created_by_user_id", sa.String(36), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_activity_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "ux_chat_space_links_thread",
        "chat_space_links",
        ["workspace_id", "provider", "external_channel_id", "external_thread_id"],
        unique=True,
    )
    op.create_index(
        "ux_chat_space_links_conversation",
        "chat_space_links",
        ["workspace_id", "provider", "external_channel_id"],
        unique=True,
        sqlite_where=_WHOLE_CONVERSATION,
        postgresql_where=_WHOLE_CONVERSATION,
    )
    op.create_index("ix_chat_space_links_space", "chat_space_links", ["cc_space_id"])
    op.create_table(
        "chat_user_links",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("workspace_id", sa.String(64), nullable=False),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("external_team_id", sa.String(64), nullable=False),
        sa.Column("external_user_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(36), nullable=False),
        sa.Column("method", sa.String(16), nullable=False),
        sa.Column("linked_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "ux_chat_user_links_external",
        "chat_user_links",
        ["workspace_id", "provider", "external_team_id", "external_user_id"],
        unique=True,
    )
    op.create_index("ux_chat_user_links_user", "chat_user_links", ["workspace_id", "provider", "user_id"], unique=True)
    op.create_table(
        "chat_open_streams",
        sa.Column("space_id", sa.String(36), sa.ForeignKey("spaces.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("channel", sa.String(64), nullable=False),
        sa.Column("ts", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(36), nullable=True),
        sa.Column("card", sa.JSON, nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("chat_open_streams")
    op.drop_table("chat_user_links")
    op.drop_table("chat_space_links")
