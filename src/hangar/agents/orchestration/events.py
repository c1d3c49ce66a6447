"""Events of orchestrations: a record changed status (clients watching a ticket read it again), and a node was
approved (what a suspended ``orchestration.awaitApproval`` step waits for, matched on both fields)."""

from __future__ import annotations

from typing import ClassVar

from hangar.core.event_types import DomainEvent


class OrchestrationChanged(DomainEvent):
    type: ClassVar[str] = "orchestration.changed"
    orchestration_id: str
    status: str


class OrchestrationNodeApproved(DomainEvent):
    type: ClassVar[str] = "orchestration.nodeApproved"
    orchestration_id: str
    node_key: str


ORCHESTRATION_EVENTS: tuple[type[DomainEvent], ...] = (OrchestrationChanged, OrchestrationNodeApproved)
