"""Creating a workspace: its database first, complete, then the row that makes it a workspace.

The database is built with its first event (``identity.workspaceCreated``) and audit row under a temporary name and
renamed into place (``Databases.create_workspace``); only then are the workspace's row and its owner's
membership written. A kill at any moment leaves either no workspace or a complete one (an orphaned database
without a row is never listed, and nothing reaches it).
"""

from __future__ import annotations

from hangar.core.context import AppContext
from hangar.core.ids import new_id
from hangar.identity.events import WorkspaceCreated
from hangar.identity.models import Workspace


async def create_workspace(app: AppContext, name: str, owner_id: str, *, by: str) -> Workspace:
    """A new workspace owned by ``owner_id``; ``by`` is the audit principal."""
    ws_id = new_id()
    created = WorkspaceCreated(workspace_id=ws_id, name=name, owner_id=owner_id)
    audited = app.audit.seed(principal=by, action="workspaces.create", target=f"workspace:{ws_id}")
    await app.dbs.create_workspace(ws_id, seed=[app.bus.seed(created), audited])
    ws = await app.identity.create_workspace(name, owner_id, workspace_id=ws_id)
    await app.bus.created(ws.id)
    return ws
