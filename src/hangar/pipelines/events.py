"""Domain events of the pipelines part.

``TaskFinished`` is how any part reports a finished task (an agent run, a team member's run, a child pipeline
run) to steps suspended with ``suspendUntilTasksComplete``. It is persisted like every domain event, and the
engine also reads already-persisted ones when a step suspends, so a task that finishes before the step's
suspension is stored is not missed.
"""

from __future__ import annotations

from typing import Any, ClassVar

from hangar.core.event_types import DomainEvent


class TaskFinished(DomainEvent):
    """A task reached a terminal outcome (``completed`` counts as success; anything else fails the waiter)."""

    type: ClassVar[str] = "pipeline.taskFinished"
    task_id: str
    outcome: str
    output: Any = None


class PipelineRunFinished(DomainEvent):
    """A pipeline run ended (completed, failed or cancelled)."""

    type: ClassVar[str] = "pipeline.runFinished"
    run_id: str
    template_id: str
    status: str
    parent_run_id: str | None = None
    error: str | None = None


PIPELINE_EVENTS: tuple[type[DomainEvent], ...] = (TaskFinished, PipelineRunFinished)
