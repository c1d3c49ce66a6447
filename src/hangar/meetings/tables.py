"""The meetings' workspace tables (schema in ``meetings/migrations``, revisions ``mt…``), in the workspace's database,
written through its write transactions so every process sharing the data directory reads the current rows:

- ``meetings``: one row per meeting: title, start time, participants (names, a JSON list), and the mixed playback
  track's facts once ``meeting.assemblePlayback`` made it (the file is the server's, under the workspace's folder).
- ``meeting_segments``: the transcript, one row per segment in order (``seq``): start and end in seconds, the
  speaker's label, the text. Replaced whole (import, diarisation), never partly.
- ``meeting_channels``: retained audio, one row per uploaded channel; its normalised WAV (16 kHz, mono, 16-bit)
  lies under the workspace's folder by meeting and channel id, never by a name from input.
- ``voice_profiles``: a member's voice (an embedding vector), kept only with their consent; deletable.
- ``meeting_voiceprints``: each diarised speaker's voiceprint, one row per speaker of one diarisation
  (``meeting.diarize`` makes a diarisation id and hands only that id on in run state, which anyone who reads the
  run reads). Read by
  ``meeting.identifySpeakers`` and ``meetings.profiles.fromSpeaker``; deleted with the meeting, and only the
  latest ``voiceprints.MAX_DIARISATIONS`` diarisations of a meeting are kept.
- ``meeting_notes``, ``meeting_action_items``, ``meeting_decisions``: what the meeting-notes pipeline saved, each
  row kept (a later run adds, never wipes).
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from hangar.core.migrating import MigrationSet
from hangar.core.types import UtcDateTime

metadata = sa.MetaData()

meetings = sa.Table(
    "meetings",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("title", sa.String(300), nullable=False),
    sa.Column("started_at", UtcDateTime(), nullable=False),
    sa.Column("participants", sa.JSON(), nullable=False),
    sa.Column("created_by", sa.String(200), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("playback_bytes", sa.BigInteger(), nullable=True),
    sa.Column("playback_at", UtcDateTime(), nullable=True),
)

meeting_segments = sa.Table(
    "meeting_segments",
    metadata,
    sa.Column("meeting_id", sa.String(36), primary_key=True),
    sa.Column("seq", sa.Integer(), primary_key=True),
    sa.Column("start_s", sa.Float(), nullable=False),
    sa.Column("end_s", sa.Float(), nullable=False),
    sa.Column("speaker", sa.String(200), nullable=False),
    sa.Column("text", sa.Text(), nullable=False),
)

meeting_channels = sa.Table(
    "meeting_channels",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("meeting_id", sa.String(36), nullable=False, index=True),
    sa.Column("label", sa.String(200), nullable=False),
    sa.Column("uploaded_bytes", sa.BigInteger(), nullable=False),
    sa.Column("source_format", sa.String(200), nullable=False),
    sa.Column("samples", sa.BigInteger(), nullable=False),
    sa.Column("created_by", sa.String(200), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
)

voice_profiles = sa.Table(
    "voice_profiles",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("user_id", sa.String(36), nullable=False, index=True),
    sa.Column("label", sa.String(200), nullable=False),
    sa.Column("embedding", sa.JSON(), nullable=False),
    sa.Column("consented_at", UtcDateTime(), nullable=False),
    sa.Column("created_by", sa.String(200), nullable=False),
)

meeting_voiceprints = sa.Table(
    "meeting_voiceprints",
    metadata,
    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),  # order of saving: the latest is highest
    sa.Column("meeting_id", sa.String(36), nullable=False, index=True),
    sa.Column("diarization_id", sa.String(36), nullable=False),
    sa.Column("speaker", sa.String(200), nullable=False),
    sa.Column("run_id", sa.String(36), nullable=True),
    sa.Column("embedding", sa.JSON(), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.UniqueConstraint("diarization_id", "speaker", name="uq_meeting_voiceprints_speaker"),
)

meeting_notes = sa.Table(
    "meeting_notes",
    metadata,
    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
    sa.Column("meeting_id", sa.String(36), nullable=False, index=True),
    sa.Column("summary", sa.Text(), nullable=False),
    sa.Column("enhanced_notes", sa.Text(), nullable=False),
    sa.Column("run_id", sa.String(36), nullable=True),
    sa.Column("created_at", UtcDateTime(), nullable=False),
)

# An action item's owner and due date, in characters: the body that saves them keeps each to its column (PostgreSQL
# refuses a longer value, which would fail the whole step).
OWNER_LENGTH, DUE_LENGTH = 200, 100

meeting_action_items = sa.Table(
    "meeting_action_items",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("meeting_id", sa.String(36), nullable=False, index=True),
    sa.Column("text", sa.Text(), nullable=False),
    sa.Column("owner", sa.String(OWNER_LENGTH), nullable=True),
    sa.Column("due", sa.String(DUE_LENGTH), nullable=True),
    sa.Column("ticket_id", sa.String(36), nullable=True),
    sa.Column("run_id", sa.String(36), nullable=True),
    sa.Column("created_at", UtcDateTime(), nullable=False),
)

meeting_decisions = sa.Table(
    "meeting_decisions",
    metadata,
    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
    sa.Column("meeting_id", sa.String(36), nullable=False, index=True),
    sa.Column("text", sa.Text(), nullable=False),
    sa.Column("run_id", sa.String(36), nullable=True),
    sa.Column("created_at", UtcDateTime(), nullable=False),
)

MIGRATIONS = MigrationSet("meetings", "workspace", Path(__file__).parent / "migrations", tables=(metadata,))
