"""Where rigs meet other parts: spaces and worktrees (workspace part), membership (identity), the egress
allowlist (egress gate). Each lookup goes through the other part's public service and degrades clearly when
that part is not in this server (a server composed without the workspace part accepts any space id)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hangar.core.audit import sensitive as _sensitive
from hangar.core.context import AppContext
from hangar.core.events import StoredEvent
from hangar.errors import Refused
from hangar.identity import IdentityService, MemberRemoved
from hangar.rigs.egress.allowlist import terminal_default_allowlist
from hangar.workspace import SpaceService, SpaceUpdated, WorktreeService

# Events that end rigs: an archived space (conversationEnded), a removed member (workspaceGone).
ENDING_EVENT_TYPES: tuple[str, ...] = (SpaceUpdated.type, MemberRemoved.type)


def sensitive(content: str | bytes) -> dict[str, Any]:
    """Typed text, clipboard content, commands: only their length and SHA-256 are ever stored."""
    return _sensitive(content)


async def check_space(app: AppContext, ws: str, space_id: str, *, archived_ok: bool = False) -> None:
    """The space must exist in the workspace and (unless ``archived_ok``: looking, tidying up) not be archived
    (raises ``NotFound`` / ``Refused``)."""
    spaces = app.maybe_service(SpaceService)
    if spaces is None:
        return
    space = await spaces.get(ws, space_id)
    if space.archived_at is not None and not archived_ok:
        raise Refused(f"space {space_id} is archived: its conversation has ended, so it takes no new rigs")


async def worktree_of(app: AppContext, ws: str, space_id: str) -> Path | None:
    """The space's first worktree, mounted inside the rig's home (files are never dropped into it)."""
    worktrees = app.maybe_service(WorktreeService)
    if worktrees is None:
        return None
    paths = [Path(wt.path) for wt in await worktrees.all(ws, space_id=space_id)]
    existing = await asyncio.to_thread(lambda: [p for p in paths if p.is_dir()])
    return existing[0] if existing else None


async def allowlist(app: AppContext, ws: str, space_id: str) -> frozenset[str]:
    """The terminal's default egress allowlist: developer baseline, apt mirrors, the worktree's forge."""
    worktree = await worktree_of(app, ws, space_id)
    return await asyncio.to_thread(terminal_default_allowlist, worktree)


async def still_member(app: AppContext, ws: str, user_id: str | None) -> bool:
    """False once the workspace is gone or the person who opened the rig lost their membership."""
    if await app.service(IdentityService).get_workspace(ws) is None:
        return False
    if user_id is None:
        return True
    return await app.service(IdentityService).role_of(ws, user_id) is not None


def removed_member(ev: StoredEvent) -> str | None:
    """The user who left the workspace with this event, if any."""
    if ev.type == MemberRemoved.type:
        user_id = ev.payload.get("user_id")
        return user_id if isinstance(user_id, str) else None
    return None


def ended_space(ev: StoredEvent) -> str | None:
    """The space whose conversation ended with this event (archived), if any."""
    if ev.type == SpaceUpdated.type and ev.payload.get("archived") is True:
        space_id = ev.payload.get("space_id")
        return space_id if isinstance(space_id, str) else None
    return None
