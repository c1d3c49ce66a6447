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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from hangar.core.beneath import open_anchor, walk
from hangar.core.context import AppContext
from hangar.core.part import WorkspaceFolders
from hangar.core.postgresql import SERVER_SCHEMA, workspace_schema

BUDGET_S = 10.0
_JOURNALS = ("", "-wal", "-shm", "-journal")


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


def _tree_bytes(path: Path, clock: _Clock, skip: frozenset[str] = frozenset()) -> int:
    """The bytes of the files under the server-made folder ``path`` (0 when absent), without following anything;
    entries named in ``skip`` at its top are neither counted nor entered (``walk`` prunes folders by name, so a
    folder of that name deeper down is not entered either: the names skipped are generated ids)."""
    if clock.expired():
        return 0
    try:
        top = open_anchor(path)
    except OSError:  # absent, or not a folder (a symlink where the server made one is not followed)
        return 0
    total = 0
    try:
        for _fd, name, st, parts in walk(top, prune=skip):
            if clock.expired():
                break
            if len(parts) == 1 and name in skip:
                continue
            total += _file_bytes(st)
    finally:
        os.close(top)
    return total


def _root_bytes(root: Path, clock: _Clock, skip: frozenset[str], inside: dict[str, frozenset[str]]) -> int:
    """The server's own files: every entry of the data directory but those in ``skip`` (workspace folders, the
    server database), and in each top folder but the names ``inside`` gives for it (workspaces' folders there)."""
    total = 0
    with os.scandir(root) as entries:
        for entry in entries:
            if entry.name in skip or clock.expired():
                continue
            if entry.is_dir(follow_symlinks=False):
                total += _tree_bytes(root / entry.name, clock, inside.get(entry.name, frozenset()))
            else:
                total += _file_bytes(entry.stat(follow_symlinks=False))
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
            files = _tree_bytes(ws_dir, clock, frozenset(f"workspace.db{s}" for s in _JOURNALS))
            files += sum(_tree_bytes(p, clock) for p in outside[ws_id])
            found.append((ws_id, name, Used(db, files)))
        # The server's: every file not counted for a workspace (its folder, and its folders elsewhere).
        inside: dict[str, set[str]] = {}
        for paths in outside.values():
            for p in paths:
                if p.parent.parent == root:
                    inside.setdefault(p.parent.name, set()).add(p.name)
        skip = frozenset(ws for ws, _ in workspaces) | {f"server.db{s}" for s in _JOURNALS}
        server_db = 0 if on_postgresql else _journal_bytes(app.datadir.server_db)
        server_files = _root_bytes(root, clock, skip, {k: frozenset(v) for k, v in inside.items()})
        return Used(server_db, server_files), found

    server, found = await asyncio.to_thread(walk_all)
    if on_postgresql:
        found = [
            (ws_id, name, Used(await _schema_bytes(app, workspace_schema(ws_id)), used.files_bytes))
            for ws_id, name, used in found
        ]
        server = Used(await _schema_bytes(app, SERVER_SCHEMA), server.files_bytes)
    return Storage(server, found, complete=not clock.out)
