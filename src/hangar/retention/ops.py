"""The retention part's ops: the retention settings and the last pass, for the server owner."""

from __future__ import annotations

from hangar.core.part import FolderFinders, OpFunction
from hangar.core.types import Timestamp
from hangar.retention.schedule import (
    AUDIT_SETTING,
    DEFAULT_AUDIT_DAYS,
    DEFAULT_EVENTS_DAYS,
    EVENTS_SETTING,
    RetentionSchedule,
)
from hangar.retention.storage import measure
from hangar.rpc.context import OpContext
from hangar.rpc.registry import NoArgs, Result, op


class PrunedDatabase(Result):
    """What one retention pass deleted in one database (``server`` or a workspace's id)."""

    database: str
    events: int
    audit: int
    error: str | None


class RetentionPass(Result):
    started_at: Timestamp
    finished_at: Timestamp | None  # null: under way, or its server stopped before it finished
    databases: list[PrunedDatabase]


class RetentionView(Result):
    """The retention settings as they bind now (0: kept for ever) and the last pass."""

    events_days: int
    audit_days: int
    last_pass: RetentionPass | None


@op("server.retention", kind="read", scope="server", server_owner=True)
async def server_retention(ctx: OpContext, args: NoArgs) -> RetentionView:
    """How long events and audit rows are kept (the ``retention.*`` server settings) and what the last retention
    pass deleted in each database (server owner only)."""
    schedule = ctx.app.service(RetentionSchedule)
    last = await schedule.last_pass()
    return RetentionView(
        events_days=await schedule.days(EVENTS_SETTING, DEFAULT_EVENTS_DAYS),
        audit_days=await schedule.days(AUDIT_SETTING, DEFAULT_AUDIT_DAYS),
        last_pass=None
        if last is None
        else RetentionPass(
            started_at=last[0],
            finished_at=last[1],
            databases=[
                PrunedDatabase(database=r.database, events=r.events, audit=r.audit, error=r.error) for r in last[2]
            ],
        ),
    )


class SpaceUsed(Result):
    """Bytes of the data directory: the database's, and every other file's (symlinks counted as themselves)."""

    database_bytes: int
    files_bytes: int


class WorkspaceStorage(SpaceUsed):
    id: str
    name: str


class StorageView(Result):
    """What the data directory holds per workspace and for the server itself; ``complete`` is false when the walk
    ran out of its time and some files are not counted."""

    server: SpaceUsed
    workspaces: list[WorkspaceStorage]
    complete: bool


@op("server.storage", kind="read", scope="server", server_owner=True)
async def server_storage(ctx: OpContext, args: NoArgs) -> StorageView:
    """The data directory's size: per workspace its database and its files (repositories, spaces, worktrees,
    pipeline run folders), and the server's own (server owner only). Walked without following symlinks, within a
    time bound."""
    from hangar.identity import IdentityService

    identity = ctx.app.service(IdentityService)
    named = []
    for ws_id in await identity.list_workspace_ids():
        ws = await identity.get_workspace(ws_id)
        if ws is not None:
            named.append((ws.id, ws.name))
    found = await measure(ctx.app, named, ctx.app.service(FolderFinders).finders)
    return StorageView(
        server=SpaceUsed(database_bytes=found.server.database_bytes, files_bytes=found.server.files_bytes),
        workspaces=[
            WorkspaceStorage(id=ws_id, name=name, database_bytes=used.database_bytes, files_bytes=used.files_bytes)
            for ws_id, name, used in found.workspaces
        ],
        complete=found.complete,
    )


RETENTION_OPS: list[OpFunction] = [server_retention, server_storage]
