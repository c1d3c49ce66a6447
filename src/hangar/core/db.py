"""Databases: the server database and one database per workspace, SQLAlchemy 2 Core on SQLite.

Each part owns its tables and ships its own Alembic migration set (a directory with ``versions/``). A set is
applied to the server database or to every workspace database when that database is opened, and each set keeps
its own version table (``alembic_version_<name>``), so parts evolve their schemas without touching each other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from alembic.config import Config
from alembic.runtime.environment import EnvironmentContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, create_engine, event
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry

from hangar.core.datadir import DataDir
from hangar.core.sqlite_writer import Writer
from hangar.errors import NotFound

Scope = Literal["server", "workspace"]


@dataclass(frozen=True)
class MigrationSet:
    """One part's migrations for one kind of database."""

    name: str
    scope: Scope
    location: Path

    def __post_init__(self) -> None:
        if not (self.location / "versions").is_dir():
            raise ValueError(f"migration set {self.name!r}: {self.location}/versions is not a directory")


def _sqlite_pragmas(dbapi_conn: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
    cur = dbapi_conn.cursor()
    # WAL lets readers proceed during a write; NORMAL sync is durable across process crashes (kill -9)
    # and only risks the last transactions on power loss.
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.close()


def apply_migrations(path: Path, sets: Sequence[MigrationSet]) -> None:
    """Bring the SQLite file at ``path`` to the head of every migration set (synchronous)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(f"sqlite:///{path}")
    event.listen(engine, "connect", _sqlite_pragmas)
    try:
        with engine.begin() as conn:
            for mset in sets:
                _upgrade(conn, mset)
    finally:
        engine.dispose()
    path.chmod(0o600)


def _upgrade(conn: Connection, mset: MigrationSet) -> None:
    cfg = Config()
    cfg.set_main_option("script_location", str(mset.location))
    script = ScriptDirectory(str(mset.location))

    def upgrade(rev: Any, _context: Any) -> Any:
        return script._upgrade_revs("head", rev)

    with EnvironmentContext(cfg, script, fn=upgrade, destination_rev="head") as env:
        env.configure(connection=conn, version_table=f"alembic_version_{mset.name}", render_as_batch=True)
        with env.begin_transaction():
            env.run_migrations()


def _async_engine(path: Path) -> AsyncEngine:
    engine = create_async_engine(f"sqlite+aiosqlite:///{path}", pool_size=4, max_overflow=8)
    event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    return engine


class Databases:
    """Opens the server database at start and workspace databases lazily, migrating each on open."""

    def __init__(self, datadir: DataDir, migrations: Sequence[MigrationSet]) -> None:
        self._datadir = datadir
        self._server_sets = [m for m in migrations if m.scope == "server"]
        self._workspace_sets = [m for m in migrations if m.scope == "workspace"]
        self._server: AsyncEngine | None = None
        self._workspaces: dict[str, AsyncEngine] = {}
        self._writers: dict[str, Writer] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def open(self) -> None:
        await asyncio.to_thread(apply_migrations, self._datadir.server_db, self._server_sets)
        self._server = _async_engine(self._datadir.server_db)

    @property
    def server(self) -> AsyncEngine:
        if self._server is None:
            raise RuntimeError("Databases.open() has not been awaited")
        return self._server

    def workspace_exists(self, workspace_id: str) -> bool:
        return self._datadir.workspace_db(workspace_id).exists()

    async def workspace(self, workspace_id: str, *, create: bool = False) -> AsyncEngine:
        """The workspace's engine; opens (and migrates) it on first use.

        ``create`` makes the file when missing; otherwise a missing workspace database is ``NotFound``.
        """
        engine = self._workspaces.get(workspace_id)
        if engine is not None:
            return engine
        lock = self._locks.setdefault(workspace_id, asyncio.Lock())
        async with lock:
            engine = self._workspaces.get(workspace_id)
            if engine is not None:
                return engine
            path = self._datadir.workspace_db(workspace_id)
            if not path.exists() and not create:
                raise NotFound(f"workspace {workspace_id} has no database")
            await asyncio.to_thread(apply_migrations, path, self._workspace_sets)
            engine = _async_engine(path)
            self._workspaces[workspace_id] = engine
            return engine

    async def writer(self, workspace_id: str) -> Writer:
        """The fast write path to the workspace database (opened and migrated like ``workspace``)."""
        writer = self._writers.get(workspace_id)
        if writer is None:
            await self.workspace(workspace_id)
            writer = self._writers.setdefault(workspace_id, Writer(str(self._datadir.workspace_db(workspace_id))))
        return writer

    async def forget_workspace(self, workspace_id: str) -> None:
        writer = self._writers.pop(workspace_id, None)
        if writer is not None:
            await writer.aclose()
        engine = self._workspaces.pop(workspace_id, None)
        if engine is not None:
            await engine.dispose()

    def open_workspace_ids(self) -> list[str]:
        return list(self._workspaces)

    async def aclose(self) -> None:
        writers, self._writers = list(self._writers.values()), {}
        for writer in writers:
            await writer.aclose()
        for engine in list(self._workspaces.values()):
            await engine.dispose()
        self._workspaces.clear()
        if self._server is not None:
            await self._server.dispose()
            self._server = None
