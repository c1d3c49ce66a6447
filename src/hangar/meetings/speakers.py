"""The speaker bodies of a meeting's pipeline (state key ``meeting_id``, required, in each):

- ``meeting.diarize``: diarises the meeting's retained audio offline (``hangar.meetings.diarize``, in a process of
  its own; the channels mixed into one signal) into ``Person 1``, ``Person 2``, …, numbered by first appearance;
  relabels the transcript (state's ``transcript`` when a body before it handed one on, else the stored one) by
  overlap, and hands it on as
  ``transcript`` without saving it (``meeting.updateTranscript`` saves); emits ``diarization_spans``
  (``{start, end, speaker}``) and ``diarization_id``. Each ``Person N``'s voiceprint is kept by the server under
  that id (``hangar.meetings.voiceprints``), never put in run state: whoever reads the run (a guest) reads its
  state. With no audio retained it passes the transcript through unchanged, with no spans and no id.
- ``meeting.identifySpeakers``: matches the voiceprints the server kept for state's ``diarization_id`` against the
  workspace's saved voice profiles and applies the confident matches (similarity at least ``MATCH_THRESHOLD``; a
  profile, and a person, names one speaker at most, the best matches first): ``Person 2`` becomes the profile's
  label in ``transcript`` and ``diarization_spans``. Speakers without a confident match stay ``Person N``. Without
  profiles (or none whose embedding is a voiceprint) or without a diarisation whose voiceprints the server kept it
  changes nothing.

Limits (node config ``extras`` of ``meeting.diarize``): ``maxSpeakers`` (default 8, at most 32);
``maxMinutes`` (default 120, at most 360): the audio of all the retained channels together (each is read whole
before they are mixed); more fails the step naming the limit, nothing changed (diarising holds the audio in memory,
about 4 MB a minute, and takes some ten seconds per ten minutes on a busy machine). The clustering compares at most
``diarize.MAX_SEGMENTS`` pieces of speech; a meeting cut into more fails the step naming that limit. The
diarisation itself runs in a confined child process with its memory and CPU bounded by server settings
(``hangar.meetings.diarize_process``); one that passes them fails the step saying so, nothing changed.
"""

from __future__ import annotations

from typing import Any

from hangar.errors import InvalidArgs
from hangar.meetings import diarize_process, store, voiceprints
from hangar.meetings.bodies import Span, labelled, spans_of
from hangar.meetings.profiles import members_profiles
from hangar.meetings.state import SPANS_KEY, TRANSCRIPT_KEY, meeting_of, transcript_in_state, transcript_state
from hangar.meetings.transcript import Segment, finite
from hangar.meetings.worker_lane import channel_files
from hangar.pipelines import ConfigField, StepContext, StepResult, body, extra_count

DIARIZATION_KEY = voiceprints.DIARIZATION_KEY
DEFAULT_MAX_SPEAKERS, MAX_SPEAKERS_CEILING = 8, 32
DEFAULT_MAX_MINUTES, MAX_MINUTES_CEILING = 120, 360


async def _transcript(step: StepContext, meeting_id: str) -> list[Segment]:
    handed = transcript_in_state(step)
    if handed is not None:
        return handed
    return await store.transcript(await step.app.dbs.workspace(step.workspace_id), meeting_id)


def _span_state(spans: list[Span]) -> list[dict[str, Any]]:
    return [{"start": round(s.start, 3), "end": round(s.end, 3), "speaker": s.speaker} for s in spans]


@body(
    "meeting.diarize",
    summary="Diarises the meeting's retained audio offline into Person 1, Person 2, … and relabels the transcript.",
    config=[
        ConfigField("state.meeting_id", "The meeting"),
        ConfigField("state.transcript", "The transcript to relabel (else the stored one)"),
        ConfigField("extras.maxSpeakers", "At most this many speakers are told apart (default 8, at most 32)"),
        ConfigField("extras.maxMinutes", "A longer meeting fails the step (default 120, at most 360)"),
    ],
    on_worker=True,
    needs_server=True,
)
async def meeting_diarize(step: StepContext) -> StepResult:
    meeting = await meeting_of(step)
    extras = dict(step.config.extras)
    max_speakers = extra_count(extras, "maxSpeakers", DEFAULT_MAX_SPEAKERS, MAX_SPEAKERS_CEILING)
    max_minutes = extra_count(extras, "maxMinutes", DEFAULT_MAX_MINUTES, MAX_MINUTES_CEILING)
    engine = await step.app.dbs.workspace(step.workspace_id)
    source = await _transcript(step, meeting.id)
    retained = await store.channels(engine, meeting.id)
    if not retained:
        report = {"meetingId": meeting.id, "diarized": False, "reason": "no retained audio"}
        return StepResult.ok({TRANSCRIPT_KEY: transcript_state(source), SPANS_KEY: []}, output=report)
    # Every channel is read into memory before they are mixed, so the bound is on their sum, not the longest.
    total = sum(c.seconds for c in retained)
    if total > max_minutes * 60:
        raise InvalidArgs(
            f"the meeting's audio lasts {total / 60:.2f} minutes over its {len(retained)} channels together; "
            f"diarisation takes at most {max_minutes} (extras.maxMinutes)",
            field="maxMinutes",
        )
    async with channel_files(step, meeting.id, retained) as paths:
        # In a child process of its own, confined and bounded: a long or hostile recording takes its memory, not
        # ours.
        answer = await diarize_process.diarise(step.app, paths, max_speakers)
    from hangar.meetings import speech  # numpy: loaded when a meeting is diarised, not when the server starts

    spans = spans_of(answer.get("spans"))
    embeddings = _embeddings_of(answer.get("embeddings"), speech.VOICEPRINT_DIM)
    seconds = finite(answer.get("seconds"))
    relabelled = labelled(source, spans)
    speakers = list(dict.fromkeys(s.speaker for s in spans))
    report = {"meetingId": meeting.id, "diarized": True, "channels": len(retained), "seconds": seconds,
              "speakers": speakers, "spans": len(spans)}  # fmt: skip
    diarization_id = await voiceprints.save(engine, meeting.id, embeddings, run_id=step.run_id, now=step.clock.now())
    report["diarizationId"] = diarization_id
    mutated = {TRANSCRIPT_KEY: transcript_state(relabelled), SPANS_KEY: _span_state(spans),
               DIARIZATION_KEY: diarization_id}  # fmt: skip
    return StepResult.ok(mutated, output=report)


def _embeddings_of(raw: Any, dim: int) -> dict[str, list[float]]:
    """The diarising child's ``embeddings`` (speaker label → voiceprint): checked like any answer from a confined
    process; a malformed one fails the step, naming it."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or len(raw) > MAX_SPEAKERS_CEILING * 4:
        raise InvalidArgs("the diarisation's embeddings must map speakers to voiceprints", field="embeddings")
    out: dict[str, list[float]] = {}
    for speaker, vec in raw.items():
        # ``finite``: an integer past a float is refused here, not raised by float() as an internal error.
        numbers = [finite(v) for v in vec] if isinstance(vec, list) else []
        if not (isinstance(speaker, str) and speaker.strip() and len(numbers) == dim and None not in numbers):
            raise InvalidArgs(f"embeddings[{speaker!r}] must be a voiceprint of {dim} numbers", field="embeddings")
        out[speaker] = [v for v in numbers if v is not None]
    return out


async def _kept_voiceprints(step: StepContext, meeting_id: str, dim: int) -> dict[str, list[float]]:
    """The voiceprints the server kept for state's ``diarization_id`` (speaker label → voiceprint), those of the
    voiceprint's length; none without an id. Never voiceprints from state: a run's payload is its starter's."""
    value = step.lookup_or(DIARIZATION_KEY)
    if value is None:
        return {}
    if not isinstance(value, str) or not value.strip() or len(value) > 64:
        raise InvalidArgs(f"{DIARIZATION_KEY} must be a diarisation's id (meeting.diarize's)", field=DIARIZATION_KEY)
    kept = await voiceprints.of_diarisation(await step.app.dbs.workspace(step.workspace_id), meeting_id, value)
    return {k: v for k, v in kept.items() if len(v) == dim}


@body(
    "meeting.identifySpeakers",
    summary="Names diarised speakers after the saved voice profiles they confidently match; no-op without either.",
    config=[
        ConfigField("state.meeting_id", "The meeting"),
        ConfigField("state.diarization_id", "The diarisation whose voiceprints the server kept (meeting.diarize's)"),
        ConfigField("state.transcript", "The transcript to relabel (else the stored one)"),
    ],
    on_worker=True,
)
async def identify_speakers(step: StepContext) -> StepResult:
    from hangar.meetings import speech  # numpy: loaded when speakers are identified, not when the server starts

    meeting = await meeting_of(step)
    speakers = await _kept_voiceprints(step, meeting.id, speech.VOICEPRINT_DIM)
    # Only the profiles of people who are members now (read afresh: another process may have removed them); a
    # profile whose embedding is not a voiceprint (another length) cannot be compared, so it is not one to use.
    current = await members_profiles(step.app, step.workspace_id)
    profiles = [p for p in current if len(p.embedding) == speech.VOICEPRINT_DIM]
    if not speakers or not profiles:
        reason = "no speaker embeddings" if not speakers else "no voice profiles"
        return StepResult.ok(output={"meetingId": meeting.id, "identified": 0, "reason": reason})
    found = speech.matches(speakers, profiles)
    names = {m["speaker"]: m["label"] for m in found}
    report = {"meetingId": meeting.id, "identified": len(found), "matches": found,
              "unmatched": sorted(set(speakers) - set(names))}  # fmt: skip
    if not names:
        return StepResult.ok(output=report)
    source = await _transcript(step, meeting.id)
    spans = spans_of(step.lookup_or(SPANS_KEY))
    mutated: dict[str, Any] = {
        TRANSCRIPT_KEY: transcript_state([Segment(s.start, s.end, names.get(s.speaker, s.speaker), s.text)
                                          for s in source]),
    }  # fmt: skip
    if spans:
        mutated[SPANS_KEY] = _span_state([Span(s.start, s.end, names.get(s.speaker, s.speaker)) for s in spans])
    return StepResult.ok(mutated, output=report)


BODIES = [meeting_diarize, identify_speakers]
