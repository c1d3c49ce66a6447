"""Meetings: records, transcripts, retained channels, voice profiles, notes, action items and decisions, in the
workspace's database (see ``hangar.meetings.tables``).

Revision ID: mt0001
"""

import sqlalchemy as sa
from alembic import op

from hangar.core.types import UtcDateTime

revision = "mt0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "meetings",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("title", sa.String(300), nullable=False),
        sa.Column("started_at", UtcDateTime(), nullable=False),
        sa.Column("participants", sa.JSON(), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("playback_bytes", sa.BigInteger(), nullable=True),
        sa.Column("playback_at", UtcDateTime(), nullable=True),
    )
    op.create_table(
        "meeting_segments",
        sa.Column("meeting_id", sa.String(36), primary_key=True),
        sa.Column("seq", sa.Integer(), primary_key=True),
        sa.Column("start_s", sa.Float(), nullable=False),
        sa.Column("end_s", sa.Float(), nullable=False),
        sa.Column("speaker", sa.String(200), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
    )
    op.create_table(
        "meeting_channels",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("meeting_id", sa.String(36), nullable=False),
        sa.Column("label", sa.String(200), nullable=False),
        sa.Column("uploaded_bytes", sa.BigInteger(), nullable=False),
        sa.Column("source_format", sa.String(200), nullable=False),
        sa.Column("samples", sa.BigInteger(), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
    )
    op.create_index("ix_meeting_channels_meeting_id", "meeting_channels", ["meeting_id"])
    op.create_table(
        "voice_profiles",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("user_id", sa.String(36), nullable=False),
        sa.Column("label", sa.String(200), nullable=False),
        sa.Column("embedding", sa.JSON(), nullable=False),
        sa.Column("consented_at", UtcDateTime(), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
    )
    op.create_index("ix_voice_profiles_user_id", "voice_profiles", ["user_id"])
    op.create_table(
        "meeting_notes",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("meeting_id", sa.String(36), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("enhanced_notes", sa.Text(), nullable=False),
        sa.Column("run_id", sa.String(36), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
    )
    op.create_index("ix_meeting_notes_meeting_id", "meeting_notes", ["meeting_id"])
    op.create_table(
        "meeting_action_items",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("meeting_id", sa.String(36), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("owner", sa.String(200), nullable=True),
        sa.Column("due", sa.String(100), nullable=True),
        sa.Column("ticket_id", sa.String(36), nullable=True),
        sa.Column("run_id", sa.String(36), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
    )
    op.create_index("ix_meeting_action_items_meeting_id", "meeting_action_items", ["meeting_id"])
    op.create_table(
        "meeting_decisions",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("meeting_id", sa.String(36), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("run_id", sa.String(36), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
    )
    op.create_index("ix_meeting_decisions_meeting_id", "meeting_decisions", ["meeting_id"])


def downgrade() -> None:
    for table in (
        "meeting_decisions", "meeting_action_items", "meeting_notes", "voice_profiles", "meeting_channels",
        "meeting_segments", "meetings",
    ):  # fmt: skip
        op.drop_table(table)
