"""Domain events of rigs (the spec's Events table). Opening a rig emits no event."""

from __future__ import annotations

from typing import Literal

from hangar.core.event_types import DomainEvent


class RigClosedEvent(DomainEvent):
    """A rig closed (or failed: ``phase`` says which), carrying its close reason."""

    type = "rigs.closed"
    rig_id: str
    space_id: str
    surface: str
    reason: str
    phase: Literal["closed", "failed"] = "closed"


class RigControlChanged(DomainEvent):
    """A person took control of a rig, or handed it back."""

    type = "rigs.controlChanged"
    rig_id: str
    space_id: str
    change: Literal["takeover", "handback"]
    user_id: str


class RigReaped(DomainEvent):
    """A rig was closed for idleness, its hard TTL or memory eviction; ``agent`` is whoever drove it last."""

    type = "rigs.reaped"
    rig_id: str
    space_id: str
    reason: str
    cause: Literal["idle", "ttl", "memory"]
    agent: str | None


class RigDevDomainChanged(DomainEvent):
    """A dev domain was mapped (or re-pointed) or removed. Every server process follows it: the space's live
    rigs get their resolver names and HTTPS leaf in step with the table, whichever process changed it."""

    type = "rigs.devDomainChanged"
    space_id: str
    domain: str
    change: Literal["set", "removed"]
    rig_id: str | None = None
    guest_port: int | None = None


RIG_EVENTS: tuple[type[DomainEvent], ...] = (RigClosedEvent, RigControlChanged, RigReaped, RigDevDomainChanged)
