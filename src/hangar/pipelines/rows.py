"""The records the pipelines store reads and writes: a run row, a trigger row, and one tick's changes."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hangar.core.event_types import DomainEvent
from hangar.pipelines._algo import StepRec
from hangar.pipelines.model import RunStatus


@dataclass
class RunRow:
    id: str
    workspace_id: str
    template_id: str
    template: dict[str, Any]
    status: RunStatus
    trigger_kind: str
    payload: dict[str, Any]
    state: dict[str, Any]
    dry_run: bool
    created_at: datetime
    updated_at: datetime
    trigger_id: str | None = None
    trigger_key: str | None = None
    parent_run_id: str | None = None
    parent_step_id: str | None = None
    error: str | None = None
    created_by: str | None = None
    finished_at: datetime | None = None


@dataclass(frozen=True)
class TriggerRow:
    id: str
    template_id: str
    kind: str
    event_type: str | None
    cron: str | None
    payload: dict[str, Any]
    enabled: bool
    last_fired_at: datetime | None
    next_fire_at: datetime | None
    created_at: datetime


@dataclass
class Tick:
    """What one scheduling tick of one run changed."""

    run: RunRow | None = None
    steps: list[StepRec] = field(default_factory=list)
    waits_added: list[tuple[str, str]] = field(default_factory=list)  # (step_id, wait_key)
    waits_cleared: list[str] = field(default_factory=list)  # step ids
    events: list[DomainEvent] = field(default_factory=list)  # written with the tick (a run's end announcements)

    def __bool__(self) -> bool:
        return bool(self.run or self.steps or self.waits_added or self.waits_cleared or self.events)


def aware(value: datetime | None) -> datetime | None:
    """SQLite hands datetimes back without their offset; every stored one is UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)
