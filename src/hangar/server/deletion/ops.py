"""``workspaces.delete`` and the server's record of deletions (``workspaces.deletions``).

The delete op is server-scoped (its ``workspace_id`` is an argument, not the scope key) so that the server owner
may delete a workspace they do not belong to; its owners and admins may too, nobody else. A credential limited
to one workspace, a read-only one or an agent's reaches no server-scoped change, and one issued to an application
(an OAuth client's, an MCP client's) or with a deadline is refused here: only a person's own credential deletes.
``confirm`` must be the workspace's name, checked after the caller's role, so the name is told only to someone
who may know it; what the caller typed is never repeated (it may be anything pasted).
"""

from __future__ import annotations

import logging

from pydantic import Field

from hangar.core.part import OpFunction
from hangar.core.principal import Role
from hangar.core.types import Timestamp
from hangar.errors import Conflict, Forbidden, InvalidArgs, NotFound, Unavailable
from hangar.identity import IdentityService
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, NoArgs, Result, op
from hangar.server.deletion import steps
from hangar.server.deletion.tables import DELETING

log = logging.getLogger(__name__)

MAX_NAME = 200


class DeleteWorkspaceArgs(Args):
    workspace_id: str = Field(alias="workspace_id", min_length=1, max_length=64, description="The workspace.")
    # As long as a workspace's name may be (``workspaces.create``): anything longer is no workspace's name.
    confirm: str = Field(max_length=MAX_NAME, description="The workspace's name, typed again.")


class WorkspaceDeletion(Result):
    workspace_id: str = Field(serialization_alias="workspace_id")
    name: str
    requested_by: str = Field(description="Who asked (user:<id>).")
    state: str = Field(description="deleting (under way, finished at the next start if interrupted) or deleted")
    step: str = Field(description="The last step done: recorded, stopped, files, deleted.")
    started_at: Timestamp
    finished_at: Timestamp | None


def _view(d: steps.Deletion) -> WorkspaceDeletion:
    return WorkspaceDeletion.model_validate(d, from_attributes=True)


async def _check_role(ctx: OpContext, workspace_id: str) -> None:
    """The server owner, or an owner or admin of the workspace (their role as stored now)."""
    if ctx.principal.is_server_owner:
        return
    role = await ctx.app.service(IdentityService).role_of(workspace_id, ctx.principal.user_id)
    if role is None:
        raise Forbidden(f"you are not a member of workspace {workspace_id}")
    if role < Role.admin:
        raise Forbidden(f"workspaces.delete needs the admin role in workspace {workspace_id}; you are {role.name}")


@op("workspaces.delete", kind="destructive", scope="server")
async def workspaces_delete(ctx: OpContext, args: DeleteWorkspaceArgs) -> WorkspaceDeletion:
    """Delete a workspace and everything in it: its rigs, runs and chat connection stop, its credentials and
    invites are revoked, its databases, files and chat credentials are removed. ``confirm`` must equal the
    workspace's name. Allowed to the workspace's owners and admins and to the server owner. The server keeps a
    record of the deletion (``workspaces.deletions``); one interrupted half way finishes at the next start."""
    if ctx.principal.delegated:
        raise Forbidden(
            "workspaces.delete needs a person's own credential; this one was issued to an application or an agent"
        )
    ws_id = args.workspace_id
    workspace = await ctx.app.service(IdentityService).get_workspace(ws_id)
    if workspace is None:
        gone = await steps.find(ctx.app, ws_id)
        if gone is not None and gone.state == DELETING:
            raise Conflict(f"workspace {ws_id} is being deleted already")
        raise NotFound(f"there is no workspace {ws_id}")
    await _check_role(ctx, ws_id)
    if args.confirm != workspace.name:
        raise InvalidArgs(
            f"confirm must be the workspace's name, {workspace.name!r}, typed exactly; nothing was deleted",
            field="confirm",
        )
    admin = None if ctx.principal.is_server_owner else ctx.principal.user_id
    deletion = await steps.begin(ctx.app, ws_id, workspace.name, ctx.principal.label, admin=admin)
    try:
        return _view(await steps.finish(ctx.app, deletion))
    except OSError as exc:
        # Recorded and unreachable already; what is left (files a live process keeps writing) is retried.
        log.exception("the deletion of workspace %s stopped half way", ws_id)
        raise Unavailable(
            f"workspace {ws_id} is deleted for everyone, but removing its files failed ({exc.strerror}); the server "
            "finishes it at its next start"
        ) from exc


@op("workspaces.deletions", kind="read", scope="server", server_owner=True)
async def workspaces_deletions(ctx: OpContext, args: NoArgs) -> list[WorkspaceDeletion]:
    """The server's record of deleted workspaces, newest first: who asked, which workspace, when (server owner
    only)."""
    return [_view(d) for d in await steps.all_deletions(ctx.app)]


DELETION_OPS: list[OpFunction] = [workspaces_delete, workspaces_deletions]
