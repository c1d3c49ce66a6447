"""Diarised speakers' voiceprints kept by the server (``meeting_voiceprints``), no longer in pipeline run state:
``meeting.diarize`` saves them under a diarisation id and hands on only that id (see ``hangar.meetings.tables``).
The voiceprints runs made before this kept in their state (``speaker_embeddings``, readable by anyone who reads
the run) are removed from it: those runs' speakers are no longer identified from them, which a new run does.

Revision ID: mt0002
"""

import json

import sqlalchemy as sa
from alembic import op

from hangar.core.types import UtcDateTime

revision = "mt0002"
down_revision = "mt0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "meeting_voiceprints",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("meeting_id", sa.String(36), nullable=False),
        sa.Column("diarization_id", sa.String(36), nullable=False),
        sa.Column("speaker", sa.String(200), nullable=False),
        sa.Column("run_id", sa.String(36), nullable=True),
        sa.Column("embedding", sa.JSON(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.UniqueConstraint("diarization_id", "speaker", name="uq_meeting_voiceprints_speaker"),
    )
    op.create_index("ix_meeting_voiceprints_meeting_id", "meeting_voiceprints", ["meeting_id"])
    _drop_voiceprints_from_run_state()


EMBEDDINGS_KEY = "speaker_embeddings"


def _drop_voiceprints_from_run_state() -> None:
    """``speaker_embeddings`` out of every pipeline run's state (the pipelines' table, when this database has it
    yet: a new one has no runs)."""
    bind = op.get_bind()
    if not sa.inspect(bind).has_table("pipeline_runs"):
        return
    runs = sa.table("pipeline_runs", sa.column("id", sa.String), sa.column("state", sa.JSON))
    found = bind.execute(
        sa.select(runs.c.id, runs.c.state).where(sa.cast(runs.c.state, sa.Text).like(f'%"{EMBEDDINGS_KEY}"%'))
    ).all()
    for run_id, state in found:
        value = json.loads(state) if isinstance(state, str) else state
        if isinstance(value, dict) and EMBEDDINGS_KEY in value:
            value.pop(EMBEDDINGS_KEY)
            bind.execute(runs.update().where(runs.c.id == run_id).values(state=value))


def downgrade() -> None:
    op.drop_table("meeting_voiceprints")
