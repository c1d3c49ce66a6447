"""The identity part: users, workspaces, members, devices, pairing, the session policy.

What it offers the other parts: ``IdentityService`` (looked up with ``app.service(IdentityService)``): who a
credential belongs to, roles, members, server settings (``SETTING_OWNER`` names the server owner's);
``usable_workspace_ids`` for parts that resume work in every workspace at start; the records ``User``,
``Workspace``, ``Member``, ``Device`` and ``DeviceScope`` (a credential narrower than its holder);
``create_workspace`` and ``check_may_create`` (who may make a workspace, and making one: an import makes one
with its records); ``Pairing`` (looked up the same way: pairing codes, and ``sign_in`` for a sign-in that issues its own
credential); and the membership events (``WorkspaceCreated``, ``MemberAdded``,
``MemberRoleChanged``, ``MemberRemoved``)."""

from __future__ import annotations

from hangar.identity.creation import check_may_create, create_workspace
from hangar.identity.events import MemberAdded, MemberRemoved, MemberRoleChanged, WorkspaceCreated
from hangar.identity.models import Device, DeviceScope, Member, User, Workspace
from hangar.identity.pairing import Pairing
from hangar.identity.server_settings import SETTING_OWNER
from hangar.identity.service import IdentityService, usable_workspace_ids

__all__ = [
    "SETTING_OWNER",
    "Device",
    "DeviceScope",
    "IdentityService",
    "Member",
    "MemberAdded",
    "MemberRemoved",
    "MemberRoleChanged",
    "Pairing",
    "User",
    "Workspace",
    "WorkspaceCreated",
    "check_may_create",
    "create_workspace",
    "usable_workspace_ids",
]
