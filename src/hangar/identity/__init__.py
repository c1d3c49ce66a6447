"""The identity part: users, workspaces, members, devices, pairing, the session policy.

What it offers the other parts: ``IdentityService`` (looked up with ``app.service(IdentityService)``): who a
credential belongs to, roles, members, server settings (``SETTING_OWNER`` names the server owner's);
``usable_workspace_ids`` for parts that resume work in every workspace at start; the records ``User``,
``Workspace`` and ``Member``; ``DeviceScope``, what a credential narrower than its holder reaches (an agent
run's); and the membership events (``WorkspaceCreated``, ``MemberAdded``, ``MemberRoleChanged``,
``MemberRemoved``)."""

from __future__ import annotations

from hangar.identity.events import MemberAdded, MemberRemoved, MemberRoleChanged, WorkspaceCreated
from hangar.identity.models import DeviceScope, Member, User, Workspace
from hangar.identity.service import SETTING_OWNER, IdentityService, usable_workspace_ids

__all__ = [
    "SETTING_OWNER",
    "DeviceScope",
    "IdentityService",
    "Member",
    "MemberAdded",
    "MemberRemoved",
    "MemberRoleChanged",
    "User",
    "Workspace",
    "WorkspaceCreated",
    "usable_workspace_ids",
]
