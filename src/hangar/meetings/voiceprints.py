"""Diarised speakers' voiceprints, kept by the server (``meeting_voiceprints``): a voiceprint is biometric, and
pipeline run state is read by anyone who may read the run (guests included), so ``meeting.diarize`` saves each
``Person N``'s voiceprint here under a fresh diarisation id and hands on only that id (``diarization_id``).
``meeting.identifySpeakers`` and ``meetings.profiles.fromSpeaker`` read them back from here, never from state.

A meeting keeps the voiceprints of its latest ``MAX_DIARISATIONS`` diarisations (a run in progress still finds
its own); older ones are deleted when a newer one is saved, and all of them with the meeting."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core.db import write_transaction
from hangar.core.ids import new_id
from hangar.errors import NotFound
from hangar.meetings.store import get_meeting, meeting_in
from hangar.meetings.tables import meeting_voiceprints as table

DIARIZATION_KEY = "diarization_id"  # what run state holds of a diarisation: its id, no voiceprint
MAX_DIARISATIONS = 8  # kept per meeting


async def save(
    engine: AsyncEngine, meeting_id: str, prints: Mapping[str, Sequence[float]], *, run_id: str | None, now: datetime
) -> str:
    """Keep ``prints`` (speaker label → voiceprint) as one diarisation of the meeting; its new id. The meeting's
    diarisations past the latest ``MAX_DIARISATIONS`` are deleted in the same transaction."""
    diarization_id = new_id()
    async with write_transaction(engine) as conn:
        await meeting_in(conn, meeting_id)
        if prints:
            await conn.execute(
                table.insert(),
                [{"meeting_id": meeting_id, "diarization_id": diarization_id, "speaker": speaker, "run_id": run_id,
                  "embedding": [float(v) for v in vec], "created_at": now} for speaker, vec in prints.items()],
            )  # fmt: skip
        # The diarisations of the meeting, newest first (by the highest row each holds): the oldest go.
        newest = sa.func.max(table.c.id)
        q = (
            sa.select(table.c.diarization_id)
            .where(table.c.meeting_id == meeting_id)
            .group_by(table.c.diarization_id)
            .order_by(newest.desc())
            .offset(MAX_DIARISATIONS)
        )
        old = [r[0] for r in (await conn.execute(q)).all()]
        if old:
            await conn.execute(table.delete().where(table.c.diarization_id.in_(old)))
    return diarization_id


async def of_diarisation(engine: AsyncEngine, meeting_id: str, diarization_id: str) -> dict[str, list[float]]:
    """The voiceprints of one diarisation of this meeting (speaker label → voiceprint); empty when it kept none
    (no speech, another meeting's id, or one deleted since)."""
    q = (
        sa.select(table.c.speaker, table.c.embedding)
        .where(table.c.meeting_id == meeting_id, table.c.diarization_id == diarization_id)
        .order_by(table.c.id)
    )
    async with engine.connect() as conn:
        return {r.speaker: [float(v) for v in r.embedding] for r in (await conn.execute(q)).all()}


async def of_speaker(
    engine: AsyncEngine, meeting_id: str, speaker: str, diarization_id: str | None = None
) -> list[float]:
    """The voiceprint of ``speaker`` (a diarised label, ``Person 2``) in the meeting's latest diarisation (or the one
    named); ``NotFound`` naming the speakers it has."""
    await get_meeting(engine, meeting_id)
    async with engine.connect() as conn:
        if diarization_id is None:
            latest = sa.select(sa.func.max(table.c.id)).where(table.c.meeting_id == meeting_id).scalar_subquery()
            diarization_id = await conn.scalar(sa.select(table.c.diarization_id).where(table.c.id == latest))
    if diarization_id is None:
        raise NotFound(f"meeting {meeting_id} has no diarised speakers yet (meeting.diarize finds them)")
    prints = await of_diarisation(engine, meeting_id, diarization_id)
    if not prints:
        raise NotFound(f"meeting {meeting_id} has no diarisation {diarization_id} with voiceprints")
    if speaker not in prints:
        raise NotFound(
            f"meeting {meeting_id}'s diarisation has no voiceprint of speaker {speaker!r}; its speakers are "
            + ", ".join(prints)
        )
    return prints[speaker]
