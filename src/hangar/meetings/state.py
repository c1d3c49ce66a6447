"""What the meeting bodies read from pipeline state: ``meeting_id`` (required, a meeting of the run's workspace,
looked up), the transcript a body hands on (``transcript``: a list of segments ``{start, end, speaker, text}``), and
the diarisation's spans (``diarization_spans``: a list of ``{start, end, speaker}``, times in seconds)."""

from __future__ import annotations

from typing import Any

from hangar.errors import InvalidArgs, NotFound
from hangar.meetings import store
from hangar.meetings.store import Meeting
from hangar.meetings.transcript import Segment, from_json
from hangar.pipelines import StepContext

MEETING_KEY = "meeting_id"
TRANSCRIPT_KEY = "transcript"
SPANS_KEY = "diarization_spans"
OUTCOME_KEY = "meeting_outcome"


async def meeting_of(step: StepContext) -> Meeting:
    """The meeting state's ``meeting_id`` names; the step fails with a sentence naming the key otherwise."""
    if not step.has(MEETING_KEY):
        raise InvalidArgs(f"state has no {MEETING_KEY}: the meeting bodies need the meeting's id", field=MEETING_KEY)
    value = step.lookup(MEETING_KEY)
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgs(f"{MEETING_KEY} must be a meeting's id", field=MEETING_KEY)
    try:
        return await store.get_meeting(await step.app.dbs.workspace(step.workspace_id), value.strip())
    except NotFound as exc:
        raise InvalidArgs(f"{MEETING_KEY}: {exc.message}", field=MEETING_KEY) from exc


def transcript_in_state(step: StepContext) -> list[Segment] | None:
    """The transcript a body before this one handed on in state, checked; None when state holds none."""
    if not step.has(TRANSCRIPT_KEY) or step.lookup(TRANSCRIPT_KEY) is None:
        return None
    try:
        return from_json(step.lookup(TRANSCRIPT_KEY))
    except InvalidArgs as exc:
        raise InvalidArgs(f"state's {TRANSCRIPT_KEY}: {exc.message}", field=TRANSCRIPT_KEY) from exc


def transcript_state(segments: list[Segment]) -> list[dict[str, Any]]:
    return [s.to_wire() for s in segments]
