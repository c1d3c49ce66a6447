"""Making a folder under a workspace's directory (a space's folder, the repos' and worktrees' folders).

A request checks its access when it starts; a deletion may commit after that check and before the request makes
its folder. The folder is made only while the server's record still holds the workspace, and beneath the
workspace's directory as it is (``DataDir.workspace_folder``), never recreating it: a deletion that won the race
leaves nothing behind, and the request is told the workspace is gone."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hangar.core.context import AppContext
from hangar.errors import NotFound
from hangar.identity import IdentityService


async def make_folder(app: AppContext, workspace_id: str, path: Path, *, mode: int = 0o777) -> Path:
    """``path`` (beneath the workspace's directory), made with its missing parents; ``NotFound`` when the
    workspace was deleted meanwhile."""
    if await app.service(IdentityService).get_workspace(workspace_id) is None:
        raise NotFound(f"workspace {workspace_id} no longer exists (it was deleted)")
    return await asyncio.to_thread(app.datadir.workspace_folder, workspace_id, path, mode=mode)
