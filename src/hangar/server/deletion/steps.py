"""Deleting a workspace, in steps that survive a kill at any point.

1. ``recorded`` (one transaction on the server database): the deletion's row is written in state ``deleting``,
   and with it the workspace's row and every membership go, its device credentials, OAuth grants and unused
   codes are revoked and its invites deleted. The authority counter moves in the same transaction, so from
   its commit every process refuses every op on the workspace (each reads memberships per decision) and every
   watch on it ends (``hangar.rpc.access``): nothing is delivered after.
2. ``stopped``: this process's rigs of the workspace close, its pipeline and agent runs are cancelled (whichever
   process drives them), its chat connections stop and their claims go; the event bus stops tailing it.
3. ``files``: the run folders of its pipeline and agent runs (ids read from its database), then its directory
   (database, repos, spaces and worktrees, chat credentials), removed beneath descriptors without following a
   symlink (``hangar.core.beneath``); on PostgreSQL its schema is dropped.
4. ``deleted``: the row's state; it stays as the server's audit row of the deletion.

Each step is safe to run again, so a server that starts and finds a row still ``deleting`` runs the rest from the
step after the one recorded (``resume_all``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import sqlalchemy as sa

from hangar.agents.runner import AgentRunner
from hangar.agents.tables import agent_runs
from hangar.chat.descriptor import DESCRIPTORS
from hangar.chat.service import ChatService
from hangar.core import outbox
from hangar.core.beneath import remove_path
from hangar.core.context import AppContext
from hangar.core.db import write_transaction
from hangar.core.disks import ScopeDisks
from hangar.core.principal import Role
from hangar.errors import Conflict, Forbidden, HangarError, NotFound
from hangar.identity import tables as it
from hangar.oauth import tables as ot
from hangar.pipelines.engine import PipelineEngine
from hangar.pipelines.layout import control_dir, run_dir
from hangar.pipelines.tables import runs as pipeline_runs
from hangar.rigs.lifecycle.manager import RigManager
from hangar.rigs.model import CloseReason
from hangar.server.deletion.tables import DELETED, DELETING, workspace_deletions

log = logging.getLogger(__name__)

RECORDED, STOPPED, FILES = "recorded", "stopped", "files"
STEPS = (RECORDED, STOPPED, FILES, DELETED)

# Tests only: the step after which a deletion waits forever, so a test can kill the process there (kill -9).
HOLD_VARIABLE = "HANGAR_TEST_HOLD_DELETION"


@dataclass(frozen=True)
class Deletion:
    workspace_id: str
    name: str
    requested_by: str
    state: str
    step: str
    started_at: datetime
    finished_at: datetime | None


async def find(app: AppContext, workspace_id: str) -> Deletion | None:
    t = workspace_deletions
    async with app.dbs.server.connect() as conn:
        row = (await conn.execute(sa.select(t).where(t.c.workspace_id == workspace_id))).mappings().first()
    return None if row is None else Deletion(**row)


async def all_deletions(app: AppContext) -> list[Deletion]:
    t = workspace_deletions
    async with app.dbs.server.connect() as conn:
        rows = (await conn.execute(sa.select(t).order_by(t.c.started_at.desc()))).mappings().all()
    return [Deletion(**r) for r in rows]


async def begin(app: AppContext, workspace_id: str, confirmed_name: str, by: str, *, admin: str | None) -> Deletion:
    """Step 1: record the deletion and end every way into the workspace, in one transaction. What the caller
    checked is checked again under the write lock, so nothing changed in between counts: the name (a rename
    refuses: ``Conflict``) and, unless ``admin`` is None (the server owner), that user's owner or admin role."""
    now = app.clock.now()
    async with write_transaction(app.dbs.server) as conn:
        row = (await conn.execute(sa.select(it.workspaces.c.name).where(it.workspaces.c.id == workspace_id))).first()
        if row is None:
            raise NotFound(f"workspace {workspace_id} does not exist (it may have been deleted meanwhile)")
        if row[0] != confirmed_name:
            raise Conflict(f"workspace {workspace_id} was renamed meanwhile; confirm with its new name")
        if admin is not None:
            member = it.memberships.c
            role = await conn.scalar(
                sa.select(member.role).where(member.workspace_id == workspace_id, member.user_id == admin)
            )
            if role is None or Role[role] < Role.admin:
                raise Forbidden(f"workspaces.delete needs the admin role in workspace {workspace_id}")
        await conn.execute(
            sa.insert(workspace_deletions).values(
                workspace_id=workspace_id,
                name=row[0],
                requested_by=by,
                state=DELETING,
                step=RECORDED,
                started_at=now,
            )
        )
        await conn.execute(sa.delete(it.memberships).where(it.memberships.c.workspace_id == workspace_id))
        await conn.execute(sa.delete(it.workspaces).where(it.workspaces.c.id == workspace_id))
        await conn.execute(sa.delete(it.pairing_codes).where(it.pairing_codes.c.workspace_id == workspace_id))
        devices = it.devices.c
        await conn.execute(
            sa.update(it.devices)
            .where(devices.workspace_id == workspace_id, devices.revoked_at.is_(None))
            .values(revoked_at=now)
        )
        grants = ot.grants.c
        await conn.execute(
            sa.update(ot.grants)
            .where(grants.workspace_id == workspace_id, grants.revoked_at.is_(None))
            .values(revoked_at=now)
        )
        codes = ot.codes.c
        await conn.execute(
            sa.update(ot.codes).where(codes.workspace_id == workspace_id, codes.used_at.is_(None)).values(used_at=now)
        )
        # Events staged for the workspace but not relayed yet have nowhere to go.
        await conn.execute(sa.delete(outbox.event_outbox).where(outbox.event_outbox.c.workspace_id == workspace_id))
    found = await find(app, workspace_id)
    assert found is not None
    await _held(RECORDED)
    return found


async def finish(app: AppContext, deletion: Deletion) -> Deletion:
    """Steps 2 to 4, from the one after ``deletion.step``; each is safe to run again."""
    ws = deletion.workspace_id
    todo: list[tuple[str, Callable[[AppContext, str], Awaitable[None]]]] = [
        (STOPPED, _stop),
        (FILES, _remove_files),
    ]
    done = STEPS.index(deletion.step)
    for step, run in todo:
        if STEPS.index(step) <= done:
            continue
        await run(app, ws)
        await _record_step(app, ws, step)
        await _held(step)
    finished_at = app.clock.now()
    t = workspace_deletions
    async with app.dbs.server.begin() as conn:
        await conn.execute(
            sa.update(t).where(t.c.workspace_id == ws).values(state=DELETED, step=DELETED, finished_at=finished_at)
        )
    log.info("workspace %s (%s) deleted, asked by %s", ws, deletion.name, deletion.requested_by)
    found = await find(app, ws)
    assert found is not None
    return found


async def resume_all(app: AppContext) -> list[str]:
    """Finish every deletion a stopped process left ``deleting``; answers their workspace ids."""
    t = workspace_deletions
    async with app.dbs.server.connect() as conn:
        rows = (await conn.execute(sa.select(t).where(t.c.state == DELETING))).mappings().all()
    finished = []
    for row in rows:
        deletion = Deletion(**row)
        log.warning(
            "finishing the deletion of workspace %s, interrupted at step %s", deletion.workspace_id, deletion.step
        )
        try:
            await finish(app, deletion)
        except (HangarError, OSError):
            log.exception(
                "the deletion of workspace %s could not be finished; it is tried again at the next start",
                deletion.workspace_id,
            )
            continue
        finished.append(deletion.workspace_id)
    return finished


async def _record_step(app: AppContext, ws: str, step: str) -> None:
    t = workspace_deletions
    async with app.dbs.server.begin() as conn:
        await conn.execute(sa.update(t).where(t.c.workspace_id == ws).values(step=step))


async def _held(step: str) -> None:
    if os.environ.get(HOLD_VARIABLE) == step:
        log.warning("workspace deletion held after step %s (%s)", step, HOLD_VARIABLE)
        await asyncio.Event().wait()


async def _stop(app: AppContext, ws: str) -> None:
    """Step 2: end what runs for the workspace in this process (and ask other processes to end its runs)."""
    app.bus.forget(ws)
    manager = app.maybe_service(RigManager)
    if manager is not None:
        live = [r for r in manager.rigs.all() if r.ws == ws]
        await asyncio.gather(*(manager.closer.close_live(r, CloseReason.workspace_gone) for r in live))
    chat = app.maybe_service(ChatService)
    if chat is not None:
        for provider in DESCRIPTORS:
            await chat.registry.stop(ws, provider)
    if not await _has_database(app, ws):
        return
    engine = app.maybe_service(PipelineEngine)
    if engine is not None:
        for run_id in await engine.store.unfinished_run_ids(ws):
            with contextlib.suppress(Conflict, NotFound):  # it ended meanwhile
                await engine.cancel(ws, run_id, by="workspaceDeleted")
    runner = app.maybe_service(AgentRunner)
    if runner is not None:
        for run in await runner.store.running(ws):
            with contextlib.suppress(NotFound):
                await runner.interrupt(ws, run.id, by="workspaceDeleted")


async def _has_database(app: AppContext, ws: str) -> bool:
    try:
        await app.dbs.workspace(ws)
    except NotFound:
        return False
    return True


async def _run_ids(app: AppContext, ws: str) -> tuple[list[str], list[str]]:
    """The ids of the workspace's pipeline runs and agent runs, from its database (none once it is gone)."""
    if not await _has_database(app, ws):
        return [], []
    engine = await app.dbs.workspace(ws)
    async with engine.connect() as conn:
        pipelines = [r[0] for r in (await conn.execute(sa.select(pipeline_runs.c.id))).all()]
        agents = [r[0] for r in (await conn.execute(sa.select(agent_runs.c.id))).all()]
    return pipelines, agents


async def _remove_files(app: AppContext, ws: str) -> None:
    """Step 3: the runs' folders first (their ids are in the database), then each space folder with its disk,
    then the workspace's directory. A folder with a disk of its own (``hangar.core.disks``) is detached first:
    removing files beneath a mount would leave the mount and its image behind."""
    pipelines, agents = await _run_ids(app, ws)
    root = app.datadir.root
    disks = app.maybe_service(ScopeDisks) or ScopeDisks(root / "disks")
    for run_id in pipelines:
        with contextlib.suppress(HangarError):  # an id no folder could have been made for
            await disks.remove(run_dir(root, run_id))
            await asyncio.to_thread(remove_path, control_dir(root, run_id))
    runner = app.maybe_service(AgentRunner)
    if runner is not None:
        for run_id in agents:
            with contextlib.suppress(HangarError):
                await asyncio.to_thread(remove_path, runner.run_dir(run_id))
    spaces = app.datadir.workspace_dir(ws) / "spaces"
    for folder in await asyncio.to_thread(_folders, spaces):
        await disks.remove(folder)
    await app.dbs.drop_workspace(ws)
    await asyncio.to_thread(remove_path, app.datadir.workspace_dir(ws))


def _folders(parent: Path) -> list[Path]:
    """The directories in ``parent`` (a server-made folder), symlinks passed over (they go with ``parent``)."""
    try:
        with os.scandir(parent) as listing:
            return [parent / e.name for e in listing if e.is_dir(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []
