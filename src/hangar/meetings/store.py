"""The meetings' rows: records, the transcript, retained channels and voice profiles. Notes, action items and
decisions are in ``hangar.meetings.outcomes``.

Every reader reads the database afresh and every check-then-write runs in one write transaction
(``write_transaction``): another process sharing the data directory (a second server, a worker running a
meeting's pipeline) may change the rows at any time. A meeting's audio files are in ``hangar.meetings.files``.

These functions are also what the diarisation bodies use: ``get_meeting``, ``channels`` (with
``files.channel_path``), ``transcript``, ``replace_transcript``, ``relabel_speakers`` and ``voice_profiles``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.core.db import write_transaction
from hangar.core.ids import new_id
from hangar.errors import Conflict, InvalidArgs, NotFound
from hangar.meetings.tables import meeting_channels, meeting_segments, meetings
from hangar.meetings.tables import voice_profiles as profiles_table
from hangar.meetings.transcript import MAX_SPEAKER, Segment, checked

MAX_MEETINGS = 10_000  # per workspace
MAX_CHANNELS = 16  # retained audio channels of one meeting
MAX_PROFILES = 1_000  # voice profiles per workspace
MAX_EMBEDDING = 4096  # floats in one voice profile's embedding


@dataclass(frozen=True)
class Meeting:
    id: str
    title: str
    started_at: datetime
    participants: list[str]
    created_by: str
    created_at: datetime
    playback_bytes: int | None  # the mixed playback track's size, once assembled
    playback_at: datetime | None


@dataclass(frozen=True)
class Channel:
    """One retained channel: its normalised WAV is ``files.channel_path(app, workspace_id, meeting_id, id)``."""

    id: str
    meeting_id: str
    label: str
    uploaded_bytes: int
    source_format: str
    samples: int  # at 16 kHz
    created_by: str
    created_at: datetime

    @property
    def seconds(self) -> float:
        return self.samples / 16_000


@dataclass(frozen=True)
class VoiceProfile:
    id: str
    user_id: str
    label: str
    embedding: list[float]
    consented_at: datetime
    created_by: str


def _meeting(row: Any) -> Meeting:
    m = row._mapping
    return Meeting(
        id=m["id"], title=m["title"], started_at=m["started_at"], participants=list(m["participants"]),
        created_by=m["created_by"], created_at=m["created_at"], playback_bytes=m["playback_bytes"],
        playback_at=m["playback_at"],
    )  # fmt: skip


async def _count(conn: AsyncConnection, table: sa.Table, *where: Any) -> int:
    return int((await conn.execute(sa.select(sa.func.count()).select_from(table).where(*where))).scalar_one())


async def create_meeting(
    engine: AsyncEngine, *, title: str, started_at: datetime, participants: Sequence[str], by: str, now: datetime
) -> Meeting:
    meeting = Meeting(
        id=new_id(), title=title, started_at=started_at, participants=list(participants), created_by=by,
        created_at=now, playback_bytes=None, playback_at=None,
    )  # fmt: skip
    async with write_transaction(engine) as conn:
        if await _count(conn, meetings) >= MAX_MEETINGS:
            raise Conflict(f"a workspace holds at most {MAX_MEETINGS} meetings: delete one first")
        await conn.execute(meetings.insert().values(**meeting.__dict__))
    return meeting


async def _get(conn: AsyncConnection, meeting_id: str) -> Meeting:
    row = (await conn.execute(sa.select(meetings).where(meetings.c.id == meeting_id))).first()
    if row is None:
        raise NotFound(f"meeting {meeting_id} not found in this workspace")
    return _meeting(row)


async def meeting_in(conn: AsyncConnection, meeting_id: str) -> Meeting:
    """The meeting, read in the caller's transaction (to write rows of it there), or ``NotFound`` naming it."""
    return await _get(conn, meeting_id)


async def get_meeting(engine: AsyncEngine, meeting_id: str) -> Meeting:
    """The meeting, or ``NotFound`` naming it."""
    async with engine.connect() as conn:
        return await _get(conn, meeting_id)


async def list_meetings(engine: AsyncEngine, limit: int) -> list[Meeting]:
    """The newest first, by start time."""
    q = sa.select(meetings).order_by(meetings.c.started_at.desc(), meetings.c.id).limit(limit)
    async with engine.connect() as conn:
        return [_meeting(r) for r in (await conn.execute(q)).all()]


async def delete_meeting(engine: AsyncEngine, meeting_id: str, tables: Sequence[sa.Table]) -> None:
    """The meeting and every row of it in ``tables`` (each has a ``meeting_id``), in one transaction."""
    async with write_transaction(engine) as conn:
        await _get(conn, meeting_id)
        for table in (meeting_segments, meeting_channels, *tables):
            await conn.execute(table.delete().where(table.c.meeting_id == meeting_id))
        await conn.execute(meetings.delete().where(meetings.c.id == meeting_id))


async def set_playback(engine: AsyncEngine, meeting_id: str, size: int | None, now: datetime | None) -> None:
    async with write_transaction(engine) as conn:
        await _get(conn, meeting_id)
        await conn.execute(
            meetings.update().where(meetings.c.id == meeting_id).values(playback_bytes=size, playback_at=now)
        )


# The transcript.


async def transcript(engine: AsyncEngine, meeting_id: str) -> list[Segment]:
    """The meeting's transcript in order (empty when none was imported); ``NotFound`` for an unknown meeting."""
    q = sa.select(meeting_segments).where(meeting_segments.c.meeting_id == meeting_id).order_by(meeting_segments.c.seq)
    async with engine.connect() as conn:
        await _get(conn, meeting_id)
        rows = (await conn.execute(q)).all()
    return [Segment(r.start_s, r.end_s, r.speaker, r.text) for r in rows]


async def _write_segments(conn: AsyncConnection, meeting_id: str, segments: Sequence[Segment]) -> None:
    await conn.execute(meeting_segments.delete().where(meeting_segments.c.meeting_id == meeting_id))
    if segments:
        await conn.execute(
            meeting_segments.insert(),
            [
                {"meeting_id": meeting_id, "seq": n, "start_s": s.start, "end_s": s.end, "speaker": s.speaker,
                 "text": s.text}
                for n, s in enumerate(segments)
            ],
        )  # fmt: skip


async def replace_transcript(engine: AsyncEngine, meeting_id: str, segments: Sequence[Segment]) -> list[Segment]:
    """Replace the whole transcript with ``segments``, checked first (``transcript.checked``: a refusal names the
    segment and changes nothing). The segments as stored."""
    kept = checked(segments)
    async with write_transaction(engine) as conn:
        await _get(conn, meeting_id)
        await _write_segments(conn, meeting_id, kept)
    return kept


async def relabel_speakers(engine: AsyncEngine, meeting_id: str, names: Mapping[str, str]) -> int:
    """Rename speakers in the stored transcript (``{"Person 1": "Ada"}``), all at once (so ``A``→``B`` and
    ``B``→``A`` swap). The number of segments changed."""
    for old, new in names.items():
        if not new.strip() or len(new) > MAX_SPEAKER or "\x00" in new:
            raise InvalidArgs(f"the new label for {old!r} must be 1 to {MAX_SPEAKER} characters", field="names")
    async with write_transaction(engine) as conn:
        await _get(conn, meeting_id)
        q = sa.select(meeting_segments).where(meeting_segments.c.meeting_id == meeting_id)
        changed = 0
        for r in (await conn.execute(q)).all():
            if r.speaker in names:
                await conn.execute(
                    meeting_segments.update()
                    .where(meeting_segments.c.meeting_id == meeting_id, meeting_segments.c.seq == r.seq)
                    .values(speaker=names[r.speaker].strip())
                )
                changed += 1
    return changed


# Retained channels (their files: ``hangar.meetings.files``).


def _channel(row: Any) -> Channel:
    m = row._mapping
    return Channel(**{k: m[k] for k in Channel.__dataclass_fields__})


async def channels(engine: AsyncEngine, meeting_id: str) -> list[Channel]:
    """The meeting's retained channels, in upload order; ``NotFound`` for an unknown meeting."""
    q = (
        sa.select(meeting_channels)
        .where(meeting_channels.c.meeting_id == meeting_id)
        .order_by(meeting_channels.c.created_at, meeting_channels.c.id)
    )
    async with engine.connect() as conn:
        await _get(conn, meeting_id)
        return [_channel(r) for r in (await conn.execute(q)).all()]


async def _stored_samples(conn: AsyncConnection) -> int:
    """The samples of every retained channel of the workspace (its database holds only its own meetings)."""
    total = await conn.scalar(sa.select(sa.func.coalesce(sa.func.sum(meeting_channels.c.samples), 0)))
    return int(total or 0)


def _over_budget(stored: int, adding: int, budget: StoredBudget) -> None:
    if stored + adding > budget.samples:
        raise Conflict(
            f"the workspace keeps at most {budget.samples // 16_000} seconds of meeting audio ({budget.setting}); "
            f"{stored / 16_000:.1f} are kept, and this channel holds {adding / 16_000:.1f}: delete a meeting's "
            "audio first, or ask an owner to raise the setting"
        )


@dataclass(frozen=True)
class StoredBudget:
    """The workspace's bound on retained audio, in samples at 16 kHz, and the setting that sets it."""

    samples: int
    setting: str


async def check_channel_room(engine: AsyncEngine, meeting_id: str, budget: StoredBudget) -> None:
    """Before an upload is received: the meeting exists and has room for one more channel, and the workspace's
    audio budget is not already spent."""
    async with engine.connect() as conn:
        await _get(conn, meeting_id)
        if await _count(conn, meeting_channels, meeting_channels.c.meeting_id == meeting_id) >= MAX_CHANNELS:
            raise Conflict(f"a meeting retains at most {MAX_CHANNELS} audio channels")
        _over_budget(await _stored_samples(conn), 1, budget)


async def add_channel(engine: AsyncEngine, channel: Channel, budget: StoredBudget) -> None:
    """Record a channel whose file is already in place (the caller removes the file when this refuses): within
    the meeting's channel count and the workspace's audio budget, both counted in the same write transaction."""
    async with write_transaction(engine) as conn:
        await _get(conn, channel.meeting_id)
        where = meeting_channels.c.meeting_id == channel.meeting_id
        if await _count(conn, meeting_channels, where) >= MAX_CHANNELS:
            raise Conflict(f"a meeting retains at most {MAX_CHANNELS} audio channels")
        _over_budget(await _stored_samples(conn), channel.samples, budget)
        await conn.execute(meeting_channels.insert().values(**channel.__dict__))


# Voice profiles.


def checked_embedding(values: Sequence[float]) -> list[float]:
    if not 1 <= len(values) <= MAX_EMBEDDING:
        raise InvalidArgs(f"an embedding holds 1 to {MAX_EMBEDDING} numbers", field="embedding")
    out = [float(v) for v in values]
    if not all(math.isfinite(v) for v in out):
        raise InvalidArgs("an embedding holds finite numbers only", field="embedding")
    return out


async def add_profile(
    engine: AsyncEngine, *, user_id: str, label: str, embedding: Sequence[float], by: str, now: datetime
) -> VoiceProfile:
    """A member's voice profile, recorded with their consent (``consented_at``: when it was given)."""
    profile = VoiceProfile(new_id(), user_id, label, checked_embedding(embedding), now, by)
    async with write_transaction(engine) as conn:
        if await _count(conn, profiles_table) >= MAX_PROFILES:
            raise Conflict(f"a workspace holds at most {MAX_PROFILES} voice profiles")
        await conn.execute(profiles_table.insert().values(**profile.__dict__))
    return profile


async def voice_profiles(engine: AsyncEngine, user_id: str | None = None) -> list[VoiceProfile]:
    """The workspace's voice profiles (every one was recorded with consent), or one member's."""
    q = sa.select(profiles_table).order_by(profiles_table.c.label, profiles_table.c.id)
    if user_id is not None:
        q = q.where(profiles_table.c.user_id == user_id)
    async with engine.connect() as conn:
        rows = (await conn.execute(q)).all()
    return [VoiceProfile(**{k: r._mapping[k] for k in VoiceProfile.__dataclass_fields__}) for r in rows]


async def get_profile(engine: AsyncEngine, profile_id: str) -> VoiceProfile:
    async with engine.connect() as conn:
        row = (await conn.execute(sa.select(profiles_table).where(profiles_table.c.id == profile_id))).first()
    if row is None:
        raise NotFound(f"voice profile {profile_id} not found in this workspace")
    return VoiceProfile(**{k: row._mapping[k] for k in VoiceProfile.__dataclass_fields__})


async def delete_profiles(engine: AsyncEngine, profile_ids: Sequence[str]) -> int:
    async with write_transaction(engine) as conn:
        done = await conn.execute(profiles_table.delete().where(profiles_table.c.id.in_(list(profile_ids))))
    return int(done.rowcount or 0)
