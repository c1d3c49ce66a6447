"""The workspace part: its tables, ops, events, pipeline bodies and services."""

from __future__ import annotations

from hangar.core.context import AppContext
from hangar.core.part import Part
from hangar.workspace.bodies import BODIES
from hangar.workspace.events import WORKSPACE_EVENTS
from hangar.workspace.ops import WORKSPACE_OPS
from hangar.workspace.repos import RepoService
from hangar.workspace.sources import LOCAL_REPO_ROOTS_SPEC, TRUSTED_REPO_HOSTS_SPEC
from hangar.workspace.spaces import SpaceService
from hangar.workspace.tables import MIGRATIONS
from hangar.workspace.tickets import TicketService
from hangar.workspace.worktrees import WorktreeService
from hangar.workspace.writes import WorkspaceWrites


async def _start(app: AppContext) -> None:
    writes = app.provide(WorkspaceWrites())
    spaces = app.provide(SpaceService(app, writes))
    repos = app.provide(RepoService(app))
    app.provide(WorktreeService(app, spaces, repos))
    app.provide(TicketService(app))


WORKSPACE_PART = Part(
    name="workspace",
    ops=WORKSPACE_OPS,
    migrations=[MIGRATIONS],
    events=WORKSPACE_EVENTS,
    bodies=BODIES,
    server_settings=[LOCAL_REPO_ROOTS_SPEC, TRUSTED_REPO_HOSTS_SPEC],
    start=_start,
)
