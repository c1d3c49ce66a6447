"""Who may export a workspace: its owner or an admin, or the server owner among its members; never an agent.

Decided from the database on every use: when the op mints the URL, and again when the URL is used, so a person
removed, demoted or deactivated in between downloads nothing."""

from __future__ import annotations

from hangar.core.context import AppContext
from hangar.core.principal import Role
from hangar.errors import Forbidden
from hangar.identity import IdentityService


async def check_exporter(app: AppContext, workspace_id: str, user_id: str) -> None:
    identity = app.service(IdentityService)
    user = await identity.get_user(user_id)
    if user is None or not user.active:
        raise Forbidden("your account is not active on this server")
    if await identity.get_workspace(workspace_id) is None:
        raise Forbidden(f"workspace {workspace_id} no longer exists")
    role = await identity.role_of(workspace_id, user_id)
    if role is None:
        raise Forbidden(f"you are not a member of workspace {workspace_id}")
    if role < Role.admin and not await identity.is_server_owner(user_id):
        raise Forbidden(f"exporting a workspace needs the admin or owner role; you are {role.name}")
