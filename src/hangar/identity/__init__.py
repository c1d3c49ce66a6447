"""The identity part: users, workspaces, members, devices, pairing, the session policy.

What it offers the other parts: ``IdentityService`` (looked up with ``app.service(IdentityService)``): who a
credential belongs to, roles, members, server settings; and ``usable_workspace_ids`` for parts that resume work
in every workspace at start."""

from __future__ import annotations

from hangar.identity.service import IdentityService, usable_workspace_ids

__all__ = ["IdentityService", "usable_workspace_ids"]
