"""The deterministic persist bodies of a meeting's pipeline: ``meeting.saveNotes``, ``meeting.addActionItems`` and
``meeting.addDecisions`` each read ``meeting_id`` (required) and the agent step's ``meeting_outcome`` from state,
``{summary, enhancedNotes, actionItems[], decisions[]}``, and write their part to their own table.

A degraded run (no outcome, an outcome that is not an object, empty fields) saves nothing and wipes nothing: the
rows saved earlier stay. An action item is a string or ``{text, owner?, due?}`` (``title``/``task`` and
``assignee``/``dueDate`` are read too); a decision a string or ``{text}`` (or ``decision``). Entries of another
shape are skipped and counted in the step's output. Saving the same item or decision again adds nothing.
"""

from __future__ import annotations

from typing import Any

from hangar.meetings import outcomes
from hangar.meetings.outcomes import NewItem
from hangar.meetings.state import OUTCOME_KEY, meeting_of
from hangar.meetings.tables import DUE_LENGTH, OWNER_LENGTH
from hangar.pipelines import ConfigField, StepContext, StepResult, body

MAX_NOTES = 200_000  # characters of a summary, and of enhanced notes
MAX_ITEM_TEXT = 2_000

_CONFIG = [
    ConfigField("state.meeting_id", "The meeting"),
    ConfigField("state.meeting_outcome", "The agent's outcome {summary, enhancedNotes, actionItems[], decisions[]}"),
]


def _outcome(step: StepContext) -> dict[str, Any]:
    value = step.lookup_or(OUTCOME_KEY)
    return value if isinstance(value, dict) else {}


def _text(value: Any, limit: int) -> str | None:
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        return None
    return value.strip()[:limit]


def _first(entry: dict[str, Any], keys: tuple[str, ...], limit: int) -> str | None:
    for key in keys:
        if (found := _text(entry.get(key), limit)) is not None:
            return found
    return None


def _entries(outcome: dict[str, Any], key: str) -> list[Any]:
    value = outcome.get(key)
    return value if isinstance(value, list) else []


def action_items(outcome: dict[str, Any]) -> tuple[list[NewItem], int]:
    """The outcome's action items, and how many entries were skipped."""
    items: list[NewItem] = []
    raw = _entries(outcome, "actionItems")
    for entry in raw:
        if isinstance(entry, str):
            text = _text(entry, MAX_ITEM_TEXT)
            if text is not None:
                items.append(NewItem(text))
        elif isinstance(entry, dict):
            text = _first(entry, ("text", "title", "task"), MAX_ITEM_TEXT)
            if text is not None:
                owner = _first(entry, ("owner", "assignee"), OWNER_LENGTH)
                items.append(NewItem(text, owner, _first(entry, ("due", "dueDate"), DUE_LENGTH)))
    return items, len(raw) - len(items)


def decisions(outcome: dict[str, Any]) -> tuple[list[str], int]:
    raw = _entries(outcome, "decisions")
    texts: list[str] = []
    for entry in raw:
        text = _text(entry, MAX_ITEM_TEXT) if isinstance(entry, str) else None
        if isinstance(entry, dict):
            text = _first(entry, ("text", "decision"), MAX_ITEM_TEXT)
        if text is not None:
            texts.append(text)
    return texts, len(raw) - len(texts)


@body(
    "meeting.saveNotes",
    summary="Saves the meeting outcome's summary and enhanced notes.",
    config=_CONFIG,
    on_worker=True,
)
async def save_notes(step: StepContext) -> StepResult:
    meeting = await meeting_of(step)
    outcome = _outcome(step)
    summary = _text(outcome.get("summary"), MAX_NOTES) or ""
    enhanced = _text(outcome.get("enhancedNotes"), MAX_NOTES) or ""
    engine = await step.app.dbs.workspace(step.workspace_id)
    saved = await outcomes.add_notes(engine, meeting.id, summary, enhanced, step.run_id, step.clock.now())
    return StepResult.ok(output={"meetingId": meeting.id, "saved": saved})


@body("meeting.addActionItems", summary="Saves the meeting outcome's action items.", config=_CONFIG, on_worker=True)
async def add_action_items(step: StepContext) -> StepResult:
    meeting = await meeting_of(step)
    items, skipped = action_items(_outcome(step))
    engine = await step.app.dbs.workspace(step.workspace_id)
    added = await outcomes.add_action_items(engine, meeting.id, items, step.run_id, step.clock.now()) if items else 0
    return StepResult.ok(output={"meetingId": meeting.id, "added": added, "skipped": skipped})


@body("meeting.addDecisions", summary="Saves the meeting outcome's decisions.", config=_CONFIG, on_worker=True)
async def add_decisions(step: StepContext) -> StepResult:
    meeting = await meeting_of(step)
    texts, skipped = decisions(_outcome(step))
    engine = await step.app.dbs.workspace(step.workspace_id)
    added = await outcomes.add_decisions(engine, meeting.id, texts, step.run_id, step.clock.now()) if texts else 0
    return StepResult.ok(output={"meetingId": meeting.id, "added": added, "skipped": skipped})


BODIES = [save_notes, add_action_items, add_decisions]
