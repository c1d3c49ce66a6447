"""The transcript and audio bodies of a meeting's pipeline (state key ``meeting_id``, required, in each):

- ``meeting.updateTranscript``: applies the ``Person N`` labels of ``diarization_spans`` to the transcript (a
  segment takes the label of the span it overlaps most; a segment no span overlaps keeps its speaker), merges
  consecutive segments of one speaker (the per-window fragments) into turns, persists the result as the meeting's
  transcript and hands it on as ``transcript``. The transcript it starts from is state's ``transcript`` when a
  body before it handed one on, else the stored one. When diarisation produced nothing (no spans) it changes
  nothing.
- ``meeting.assemblePlayback``: mixes the retained channels into the meeting's playback track (ffmpeg, confined:
  ``hangar.meetings.audio``); without retained channels it changes nothing.
"""

from __future__ import annotations

import bisect
import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hangar.errors import InvalidArgs
from hangar.meetings import audio, files, store
from hangar.meetings.state import (
    SPANS_KEY,
    TRANSCRIPT_KEY,
    meeting_of,
    transcript_in_state,
    transcript_state,
)
from hangar.meetings.transcript import MAX_SEGMENTS, MAX_SPEAKER, Segment, finite, merged_turns
from hangar.meetings.worker_lane import channel_files, send_playback
from hangar.pipelines import ConfigField, StepContext, StepResult, body

# Diarisation spans in state: as many as a transcript's segments (the spans of a six-hour meeting are some thousands).
MAX_SPANS = MAX_SEGMENTS


@dataclass(frozen=True)
class Span:
    start: float
    end: float
    speaker: str


def spans_of(raw: Any) -> list[Span]:
    """``diarization_spans`` as spans; a malformed one fails the step, naming it (1-based)."""
    if raw is None:
        return []
    if not isinstance(raw, list) or len(raw) > MAX_SPANS:
        raise InvalidArgs(f"{SPANS_KEY} must be a list of at most {MAX_SPANS} spans", field=SPANS_KEY)
    spans: list[Span] = []
    for n, item in enumerate(raw, start=1):
        ok = isinstance(item, dict)
        start, end, speaker = (item.get("start"), item.get("end"), item.get("speaker")) if ok else (None, None, None)
        start, end = finite(start), finite(end)  # an integer past a float is refused here, not raised by float()
        if not (start is not None and end is not None and isinstance(speaker, str) and speaker.strip()
                and len(speaker) <= MAX_SPEAKER):  # fmt: skip
            raise InvalidArgs(
                f"{SPANS_KEY} span {n} must be {{start, end, speaker}} with times in seconds and a label",
                field=SPANS_KEY,
            )
        if end < start:
            raise InvalidArgs(f"{SPANS_KEY} span {n} ends before it starts", field=SPANS_KEY)
        spans.append(Span(start, end, speaker.strip()))
    # Who spoke when: one speaker at a time (as meeting.diarize emits them), so ``labelled`` finds a segment's
    # spans by bisection instead of trying them all.
    ordered = sorted(spans, key=lambda s: (s.start, s.end))
    for prev, span in itertools.pairwise(ordered):
        if span.start < prev.end:
            raise InvalidArgs(
                f"{SPANS_KEY}: the span {span.start:g}-{span.end:g} overlaps {prev.start:g}-{prev.end:g}; a span "
                "is one speaker's time alone",
                field=SPANS_KEY,
            )
    return spans


def labelled(segments: Sequence[Segment], spans: Sequence[Span]) -> list[Segment]:
    """Each segment with the speaker of the span it overlaps most (ties: the earlier span). The spans do not
    overlap (``spans_of`` refuses that), so sorted by start their ends are in order too: a segment's spans are
    found by bisection, and the work is the overlaps, not segments × spans."""
    ordered = sorted(spans, key=lambda s: (s.start, s.end))
    starts, ends = [s.start for s in ordered], [s.end for s in ordered]
    out: list[Segment] = []
    for seg in segments:
        best, best_overlap = seg.speaker, 0.0
        for span in ordered[bisect.bisect_right(ends, seg.start) : bisect.bisect_left(starts, seg.end)]:
            overlap = min(seg.end, span.end) - max(seg.start, span.start)
            if overlap > best_overlap:
                best, best_overlap = span.speaker, overlap
        out.append(Segment(seg.start, seg.end, best, seg.text))
    return out


@body(
    "meeting.updateTranscript",
    summary="Applies the diarisation's speaker labels to the transcript, merges fragments into turns, saves it.",
    config=[
        ConfigField("state.meeting_id", "The meeting"),
        ConfigField("state.diarization_spans", "The diarisation's spans {start, end, speaker}; none: no change"),
        ConfigField("state.transcript", "The transcript to start from (else the stored one)"),
    ],
    on_worker=True,
)
async def update_transcript(step: StepContext) -> StepResult:
    meeting = await meeting_of(step)
    spans = spans_of(step.lookup_or(SPANS_KEY))
    if not spans:
        return StepResult.ok(output={"meetingId": meeting.id, "updated": False, "reason": "no diarisation spans"})
    engine = await step.app.dbs.workspace(step.workspace_id)
    source = transcript_in_state(step)
    if source is None:
        source = await store.transcript(engine, meeting.id)
    turns = merged_turns(labelled(source, spans))
    kept = await store.replace_transcript(engine, meeting.id, turns)
    speakers = sorted({s.speaker for s in kept if s.speaker})
    report = {"meetingId": meeting.id, "updated": True, "segments": len(source), "turns": len(kept),
              "speakers": speakers}  # fmt: skip
    return StepResult.ok({TRANSCRIPT_KEY: transcript_state(kept)}, output=report)


@body(
    "meeting.assemblePlayback",
    summary="Mixes the meeting's retained audio channels into one playback track; nothing without channels.",
    config=[ConfigField("state.meeting_id", "The meeting")],
    on_worker=True,
    needs_server=True,
)
async def assemble_playback(step: StepContext) -> StepResult:
    meeting = await meeting_of(step)
    ws = step.workspace_id
    engine = await step.app.dbs.workspace(ws)
    retained = await store.channels(engine, meeting.id)
    if not retained:
        return StepResult.ok(output={"meetingId": meeting.id, "assembled": False, "reason": "no retained audio"})
    scratch = files.scratch_path(step.app, ws, meeting.id, "wav")
    # On a worker the audio lies with the server that took it: brought here, mixed, handed back.
    async with channel_files(step, meeting.id, retained) as paths:
        try:
            samples = await audio.mix(step.app, paths, scratch)
            size = scratch.stat().st_size
            if step.on_worker:
                await send_playback(step, meeting.id, scratch)
            else:
                os.rename(scratch, files.playback_path(step.app, ws, meeting.id))
        finally:
            files.discard(scratch)
    await store.set_playback(engine, meeting.id, size, step.clock.now())
    report = {"meetingId": meeting.id, "assembled": True, "channels": len(retained),
              "seconds": samples / audio.RATE, "bytes": size}  # fmt: skip
    return StepResult.ok(output=report)


BODIES = [update_transcript, assemble_playback]
