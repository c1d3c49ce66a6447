"""The built-in "meeting notes" template, made for the agent that writes the notes, and the op that gives it.

Steps: the trigger; ``meeting.diarize`` (the retained audio into ``Person N``, the transcript relabelled);
``meeting.identifySpeakers`` (saved voice profiles name the speakers they confidently match);
``meeting.updateTranscript`` (fragments merged into turns, the transcript saved); ``messaging.createSpace`` (the
conversation the agent works in); the agent (``conversation.promptAgent``) reading the transcript and submitting
``meeting_outcome`` (``{summary, enhancedNotes, actionItems[], decisions[]}`` against ``OUTCOME_SCHEMA``);
``meeting.saveNotes``, ``meeting.addActionItems`` and ``meeting.addDecisions`` side by side; once the three have
settled, ``meeting.assemblePlayback``; the terminal. A run needs the state key ``meeting_id``
(``pipelines.runs.start`` with ``payload: {meeting_id}``).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from hangar.core.part import OpFunction
from hangar.errors import InvalidArgs
from hangar.meetings.state import MEETING_KEY, OUTCOME_KEY
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, Result, op

TEMPLATE_ID = "meeting-notes"
TEMPLATE_NAME = "Meeting notes"
STATE_KEYS: tuple[str, ...] = (MEETING_KEY,)

OUTCOME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["summary", "enhancedNotes", "actionItems", "decisions"],
    "properties": {
        "summary": {"type": "string"},
        "enhancedNotes": {"type": "string"},
        "actionItems": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["text"],
                "properties": {"text": {"type": "string"}, "owner": {"type": "string"}, "due": {"type": "string"}},
            },
        },
        "decisions": {"type": "array", "items": {"type": "string"}},
    },
}

NOTES_PROMPT = (
    "Here is the transcript of a meeting, one turn per entry with its speaker and times in seconds:\n\n"
    "{{transcript}}\n\n"
    "Write the meeting's notes. Submit with submit_output an object with: summary (a few sentences saying what "
    "the meeting was about and what came of it), enhancedNotes (the notes as a markdown list, by topic), "
    "actionItems (each {text, owner, due}: what someone agreed to do, the speaker who took it as owner when the "
    "transcript says, due when a date or day was named) and decisions (each a sentence stating what was decided). "
    "Use empty lists when there are none; invent nothing the transcript does not say."
)


def _step(sid: str, body: str, after: list[str], **config: Any) -> dict[str, Any]:
    if len(after) == 1:
        return {"id": sid, "kind": "listen", "body": body, "trigger": {"sourceStepIds": after}, "config": config}
    return {"id": sid, "kind": "join", "body": body, "waitForStepIds": after, "config": config}


def notes_template(agent_id: str, template_id: str = TEMPLATE_ID) -> dict[str, Any]:
    """The template for the agent ``agent_id`` (its id), saved under ``template_id``."""
    if not agent_id.strip():
        raise InvalidArgs("agentId is empty: name the agent that writes the notes", field="agentId")
    if not template_id.strip():
        raise InvalidArgs("templateId is empty", field="templateId")
    steps: list[dict[str, Any]] = [
        {"id": "start", "kind": "trigger", "body": "pipeline.trigger"},
        _step("diarize", "meeting.diarize", ["start"], label="Tell the speakers apart"),
        _step("identify", "meeting.identifySpeakers", ["diarize"], label="Name the speakers from voice profiles"),
        _step("transcript", "meeting.updateTranscript", ["identify"], label="Save the transcript by speaker"),
        _step("open", "messaging.createSpace", ["transcript"], outputKey="pipeline_space_id",
              label="Open the notes conversation"),
        _step("notes", "conversation.promptAgent", ["open"], agentId=agent_id, prompt=NOTES_PROMPT,
              outputKey=OUTCOME_KEY, outputSchema=OUTCOME_SCHEMA, label="Write the notes"),
        _step("saveNotes", "meeting.saveNotes", ["notes"], label="Save the notes"),
        _step("actionItems", "meeting.addActionItems", ["notes"], label="Save the action items"),
        _step("decisions", "meeting.addDecisions", ["notes"], label="Save the decisions"),
        _step("playback", "meeting.assemblePlayback", ["saveNotes", "actionItems", "decisions"],
              label="Mix the playback track"),
        {"id": "end", "kind": "terminal", "trigger": {"sourceStepIds": ["playback"]}},
    ]  # fmt: skip
    return {"id": template_id, "name": TEMPLATE_NAME, "steps": steps, "edges": []}


class NotesTemplateArgs(Args):
    agent_id: str = Field(min_length=1, max_length=64, description="The agent that writes the notes (its id)")
    template_id: str = Field(default=TEMPLATE_ID, max_length=64, description="The id to save the template under")


class NotesTemplate(Result):
    template: dict[str, Any] = Field(
        description="The built-in meeting notes template for this agent: save it with pipelines.templates.create"
    )
    state_keys: list[str] = Field(description="What a run's payload holds: meeting_id")


@op("meetings.notesTemplate", kind="read", scope="workspace")
async def meetings_notes_template(ctx: OpContext, args: NotesTemplateArgs) -> NotesTemplate:
    """The built-in "meeting notes" template for this agent: diarise the meeting's audio, name speakers from voice
    profiles, save the transcript by speaker, have the agent write the notes, save the notes, action items and
    decisions, and mix the playback track. Save it with pipelines.templates.create and start it with
    pipelines.runs.start and payload {meeting_id}."""
    return NotesTemplate(template=notes_template(args.agent_id, args.template_id), state_keys=list(STATE_KEYS))


TEMPLATE_OPS: list[OpFunction] = [meetings_notes_template]
