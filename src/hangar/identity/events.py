"""Domain events of identity, published in the workspace they concern."""

from __future__ import annotations

from hangar.core.event_types import DomainEvent


class WorkspaceCreated(DomainEvent):
    type = "identity.workspaceCreated"
    name: str
    owner_id: str


class MemberAdded(DomainEvent):
    type = "identity.memberAdded"
    user_id: str
    role: str


class MemberRoleChanged(DomainEvent):
    type = "identity.memberRoleChanged"
    user_id: str
    old_role: str
    new_role: str


class MemberRemoved(DomainEvent):
    """A member left or was removed: what they held in the workspace (rigs, links) must let go."""

    type = "identity.memberRemoved"
    user_id: str
    role: str


IDENTITY_EVENTS: list[type[DomainEvent]] = [WorkspaceCreated, MemberAdded, MemberRoleChanged, MemberRemoved]
