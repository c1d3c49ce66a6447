"""The data directory's size: per workspace its database and its files, and the server's own (``server.storage``).

A workspace's database is ``<dataDir>/<id>/workspace.db`` with its journal files (on PostgreSQL: its schema's
tables, indexes and TOAST, as the database server counts them); its files are everything else in its folder
(repositories, spaces, worktrees, chat credentials) and the working directories of its pipeline runs, which lie
in ``<dataDir>/pipelines/`` (each part that keeps a workspace's files outside its folder names them:
``Part.workspace_folders``). The server's own are ``server.db`` and every other file of the data directory.

Those trees are written by guests, so they are walked beneath a descriptor (``hangar.core.beneath.walk``) and
nothing in them is followed: a symlink counts as the link itself (its ``lstat`` size), never what it points at,
and only regular files and symlinks are counted (file sizes as ``ls -l`` gives them). The walk is bounded in time
(``BUDGET_S`` for the whole directory); what it had no time for is left out and the answer says it is incomplete.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from hangar.core.beneath import open_anchor, walk
from hangar.core.context import AppContext
from hangar.core.postgresql import SERVER_SCHEMA, workspace_schema

BUDGET_S = 10.0
_JOURNALS = ("", "-wal", "-shm", "-journal")

# A part's folders outside ``<dataDir>/<workspaceId>/`` holding files of a workspace (its pipeline run folders).
WorkspaceFolders = Callable[[AppContext, str], Awaitable[list[Path]]]


@dataclass(frozen=True)
class FolderFinders:
    """Every part's ``workspace_folders``, handed over by the composition."""

    finders: tuple[WorkspaceFolders, ...]


@dataclass(frozen=True)
class Used:
    database_bytes: int
    files_bytes: int


@dataclass(frozen=True)
class Storage:
    server: Used
    workspaces: list[tuple[str, str, Used]]  # id, name, what it uses
    complete: bool  # False: the walk ran out of time, and what it did not reach is not counted


class _Clock:
    def __init__(self, budget: float) -> None:
        self.deadline = time.monotonic() + budget
        self.out = False

    def expired(self) -> bool:
        if not self.out and time.monotonic() > self.deadline:
            self.out = True
        return self.out


def _file_bytes(st: os.stat_result) -> int:
    return st.st_size if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode) else 0


def _tree_bytes(path: Path, clock: _Clock, *, skip_top: Iterable[str] = (), prune: frozenset[str] = frozenset()) -> int:
    """The bytes of the files under the server-made folder ``path`` (0 when absent), without following anything;
    names in ``skip_top`` are left out at its top level, directories named in ``prune`` anywhere."""
    if clock.expired():
        return 0
    try:
        top = open_anchor(path)
    except (FileNotFoundError, NotADirectoryError):
        return 0
    except OSError:  # a symlink where the server made a folder: not followed, not counted
        return 0
    skipped = set(skip_top)
    total = 0
    try:
        for _fd, _name, st, parts in walk(top, prune=prune):
            if clock.expired():
                break
            if len(parts) == 1 and parts[0] in skipped:
                continue
            total += _file_bytes(st)
    finally:
        os.close(top)
    return total


def _journal_bytes(db: Path) -> int:
    total = 0
    for suffix in _JOURNALS:
        with contextlib.suppress(FileNotFoundError):
            total += _file_bytes(os.lstat(f"{db}{suffix}"))
    return total


async def _schema_bytes(app: AppContext, schema: str) -> int:
    query = sa.text(
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = :schema AND c.relkind IN ('r', 'm')"
    )
    async with app.dbs.server.connect() as conn:
        return int((await conn.execute(query, {"schema": schema})).scalar() or 0)


async def measure(
    app: AppContext,
    workspaces: Sequence[tuple[str, str]],
    folders: Sequence[WorkspaceFolders],
    *,
    budget: float = BUDGET_S,
) -> Storage:
    """What the data directory holds for each of ``workspaces`` (id, name) and for the server."""
    root = app.datadir.root
    on_postgresql = app.dbs.postgresql_url is not None
    outside: dict[str, list[Path]] = {}
    for ws_id, _name in workspaces:
        outside[ws_id] = [p for part in folders for p in await part(app, ws_id)]
    clock = _Clock(budget)

    def walk_all() -> tuple[Used, list[tuple[str, str, Used]]]:
        found: list[tuple[str, str, Used]] = []
        for ws_id, name in workspaces:
            ws_dir = app.datadir.workspace_dir(ws_id)
            db = 0 if on_postgresql else _journal_bytes(ws_dir / "workspace.db")
            files = _tree_bytes(ws_dir, clock, skip_top=[f"workspace.db{s}" for s in _JOURNALS])
            files += sum(_tree_bytes(p, clock) for p in outside[ws_id])
            found.append((ws_id, name, Used(db, files)))
        # The server's: every file not counted for a workspace (its folders, and theirs elsewhere, pruned).
        counted = frozenset(ws for ws, _ in workspaces) | frozenset(p.name for ps in outside.values() for p in ps)
        server_db = 0 if on_postgresql else _journal_bytes(app.datadir.server_db)
        server_files = _tree_bytes(root, clock, skip_top=[f"server.db{s}" for s in _JOURNALS], prune=counted)
        return Used(server_db, server_files), found

    server, found = await asyncio.to_thread(walk_all)
    if on_postgresql:
        found = [
            (ws_id, name, Used(await _schema_bytes(app, workspace_schema(ws_id)), used.files_bytes))
            for ws_id, name, used in found
        ]
        server = Used(await _schema_bytes(app, SERVER_SCHEMA), server.files_bytes)
    return Storage(server, found, complete=not clock.out)
