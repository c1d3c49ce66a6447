"""Domain events of the workspace part, published on the bus (and so persisted with a sequence number)."""

from __future__ import annotations

from hangar.core.event_types import DomainEvent
from hangar.workspace.results import MessageView


class SpaceCreated(DomainEvent):
    type = "workspace.spaceCreated"
    space_id: str
    title: str
    mode: str
    kind: str
    hidden: bool


class SpaceUpdated(DomainEvent):
    """A space was renamed or archived."""

    type = "workspace.spaceUpdated"
    space_id: str
    title: str
    archived: bool


class MessagePosted(DomainEvent):
    """A message landed in a space; ``message`` is the message as ``messages.list`` returns it."""

    type = "workspace.messagePosted"
    space_id: str
    message: MessageView


class SpaceProvisioningChanged(DomainEvent):
    """Progress of setting a space up (repo checkouts, agent start), as the space row records it.

    ``state`` is ``provisioning``, ``ready``, ``failed`` or ``cancelled``; ``step`` is ``repo``, ``prCheckout``,
    ``script`` or ``agent`` while provisioning; ``detail`` names the repo or agent being set up.
    """

    type = "workspace.spaceProvisioningChanged"
    space_id: str
    state: str
    step: str | None = None
    detail: str | None = None


class TicketChanged(DomainEvent):
    type = "workspace.ticketChanged"
    ticket_id: str
    status: str


WORKSPACE_EVENTS: tuple[type[DomainEvent], ...] = (
    SpaceCreated,
    SpaceUpdated,
    MessagePosted,
    SpaceProvisioningChanged,
    TicketChanged,
)
