"""Databases: the server database and one database per workspace, SQLAlchemy 2 Core on SQLite files in the data
directory or on one PostgreSQL database (``hangar.core.postgresql``). Each database is brought to the head of its
parts' migration sets when it opens (``hangar.core.migrating``).

A new workspace's database is built, migrated and seeded under a temporary name and renamed into place in one
step, so a workspace directory either holds a complete database or does not exist. Every database's schema is
checked against its parts' table definitions when it opens; a damaged workspace database makes that workspace
answer ``unavailable`` (and is reported in the log) while the rest of the server serves.

``Databases(..., postgresql=URL)`` keeps every database in one PostgreSQL database, a schema each
(``hangar.core.postgresql``). Other processes' events are announced by NOTIFY on that database
(``postgresql_url``; ``hangar.core.event_listener``).

The stores' small write transactions (domain events, the audit log, pipeline ticks, a rig's action log, sign-in
state, a new database's seeds) take the write path of ``hangar.core.write_conn``: ``writer`` (async callers)
and ``server_runner`` (synchronous ones) give SQLite's fast path (``hangar.core.sqlite_writer``) or PostgreSQL's
pooled one (``hangar.core.pg_writer``, in the database's schema, under the same advisory write lock as
``write_transaction``). On PostgreSQL a new workspace's seeds are written inside the transaction that creates its
schema, so a kill leaves no schema or a complete, seeded one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import shutil
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy import Engine, event
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from hangar.core.datadir import DataDir
from hangar.core.dbfailures import DatabaseDamaged as DatabaseDamaged  # re-exported: callers import it from here
from hangar.core.dbfailures import SchemaNewer
from hangar.core.fileio import fsync_dir, pid_alive
from hangar.core.migrating import (
    MigrationSet,
    Seed,
    apply_migrations,
    apply_postgresql_migrations,
    sqlite_pragmas,
)
from hangar.core.postgresql import (
    PG_POOL_SIZE,
    PG_WRITE_LOCK,
    SERVER_SCHEMA,
    enter_schema,
    postgresql_engine,
    postgresql_sync_engine,
    postgresql_url,
    schema_engine,
    workspace_schema,
)
from hangar.core.sealed_tables import forget_sealed
from hangar.core.sqlite_writer import SqliteRunner, SqliteWriter, existing_uri
from hangar.core.stamps import STAMP_QUERY, StampReader
from hangar.core.write_conn import Runner, Writer
from hangar.errors import Conflict, NotFound

if TYPE_CHECKING:
    from hangar.core.leases import Leases
    from hangar.core.pg_writer import PgReader, PgWriter

log = logging.getLogger(__name__)

# How long a damaged workspace answers ``unavailable`` before its database is checked again (an operator may
# have restored it meanwhile).
_RECHECK_DAMAGED_S = 30.0
_CREATING_PREFIX = ".creating-"


@contextlib.asynccontextmanager
async def write_transaction(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A transaction that holds the database's write lock from its first statement, for check-then-act: what
    it reads cannot change before it writes, in this process or another. SQLite: ``BEGIN IMMEDIATE`` (a plain
    transaction reads a snapshot and only then asks for the lock). PostgreSQL has no database-wide write lock:
    the transaction takes an advisory lock of its own first, so write transactions run one at a time as on
    SQLite (a plain single-statement write does not wait for it, unlike SQLite's)."""
    async with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            await conn.exec_driver_sql("BEGIN IMMEDIATE")
        elif engine.dialect.name == "postgresql":
            await conn.execute(sa.select(sa.func.pg_advisory_xact_lock(PG_WRITE_LOCK)))
        try:
            yield conn
        except BaseException:
            await conn.rollback()
            raise
        await conn.commit()


def _async_engine(path: Path) -> AsyncEngine:
    """The engine of the existing database at ``path``: its connections never create the file (``existing_uri``)."""
    url = f"sqlite+aiosqlite:///{existing_uri(path)}&uri=true"
    engine = create_async_engine(url, pool_size=4, max_overflow=8)
    event.listen(engine.sync_engine, "connect", sqlite_pragmas)
    return engine


class Databases:
    """Opens the server database at start and workspace databases lazily, migrating and checking each on open."""

    def __init__(self, datadir: DataDir, migrations: Sequence[MigrationSet], *, postgresql: str | None = None) -> None:
        """``postgresql``: keep every database in this PostgreSQL database instead of SQLite files."""
        self._datadir = datadir
        self._pg_url = None if postgresql is None else postgresql_url(postgresql)
        self._pg: AsyncEngine | None = None
        self._pg_sync: Engine | None = None  # the pool of the write path's connections (``writer``)
        self._pg_threads: ThreadPoolExecutor | None = None  # and the threads its calls run on
        self._pg_reader: PgReader | None = None  # the change counters' reads (``stamp``)
        self._leases: Leases | None = None  # the process's driver leases (``leases``)
        # Reads the server setting ``leases.lapseSeconds`` (the identity part, which keeps server settings, sets it).
        self.read_lapse: Callable[[], Awaitable[Any]] | None = None
        self._server_sets = [m for m in migrations if m.scope == "server"]
        self._workspace_sets = [m for m in migrations if m.scope == "workspace"]
        self._server: AsyncEngine | None = None
        self._workspaces: dict[str, AsyncEngine] = {}
        self._writers: dict[str, Writer] = {}
        self._runners: list[Runner] = []
        self._locks: dict[str, asyncio.Lock] = {}
        self._damaged: dict[str, tuple[float, DatabaseDamaged]] = {}
        self._stamps: dict[str | None, StampReader] = {}
        self._server_writes: asyncio.Lock | None = None

    async def open(self) -> None:
        if self._pg_url is not None:
            await asyncio.to_thread(apply_postgresql_migrations, self._pg_url, self._server_sets, schema=SERVER_SCHEMA)
            self._pg = postgresql_engine(self._pg_url)
            event.listen(self._pg.sync_engine, "begin", enter_schema)
            self._server = schema_engine(self._pg, SERVER_SCHEMA)
            return
        await asyncio.to_thread(apply_migrations, self._datadir.server_db, self._server_sets)
        await asyncio.to_thread(self._clear_abandoned_creations)
        self._server = _async_engine(self._datadir.server_db)

    @property
    def server(self) -> AsyncEngine:
        if self._server is None:
            raise RuntimeError("Databases.open() has not been awaited")
        return self._server

    @property
    def workspace_sets(self) -> list[MigrationSet]:
        """The migration sets of a workspace database (its tables, as every part declares them)."""
        return list(self._workspace_sets)

    @property
    def on_postgresql(self) -> bool:
        return self._pg_url is not None

    async def create_workspace(self, workspace_id: str, seed: Sequence[Seed] = ()) -> AsyncEngine:
        """Build the workspace's database complete (migrated, checked, ``seed`` written) under a temporary
        name, then rename it into place: a kill at any moment leaves either no workspace directory or a
        complete one. ``Conflict`` when the workspace already has a directory."""
        lock = self._locks.setdefault(workspace_id, asyncio.Lock())
        async with lock:
            await self._build_workspace(workspace_id, seed)
            return self._open_engine(workspace_id)

    async def _build_workspace(self, workspace_id: str, seed: Sequence[Seed]) -> None:
        if self._pg_url is not None:
            await self._build_pg_workspace(workspace_id, seed)
            return
        final = self._datadir.workspace_dir(workspace_id)
        if (final / "workspace.db").exists():
            raise Conflict(f"workspace {workspace_id} already has a database")
        staging = self._datadir.root / f"{_CREATING_PREFIX}{workspace_id}-{os.getpid()}-{secrets.token_hex(4)}"
        staging.mkdir(mode=0o700)
        try:
            await asyncio.to_thread(apply_migrations, staging / "workspace.db", self._workspace_sets, seed=seed)
            # rename(2) is atomic, and refuses to replace a directory another creator put there meanwhile.
            if final.exists():
                os.rename(staging / "workspace.db", final / "workspace.db")
                fsync_dir(final)
            else:
                os.rename(staging, final)
            fsync_dir(self._datadir.root)
        finally:
            await asyncio.to_thread(shutil.rmtree, staging, True)

    async def _build_pg_workspace(self, workspace_id: str, seed: Sequence[Seed]) -> None:
        if await self._pg_workspace_exists(workspace_id):
            raise Conflict(f"workspace {workspace_id} already has a database")
        # One transaction: a kill leaves no schema or a complete one, as the rename does for SQLite files.
        await self._migrate_pg_workspace(workspace_id, seed)

    async def _migrate_pg_workspace(self, workspace_id: str, seed: Sequence[Seed] = ()) -> None:
        assert self._pg_url is not None
        schema = workspace_schema(workspace_id)
        await asyncio.to_thread(
            apply_postgresql_migrations, self._pg_url, self._workspace_sets, schema=schema, seed=seed
        )

    async def _pg_workspace_exists(self, workspace_id: str) -> bool:
        assert self._pg is not None
        name: sa.ColumnClause[str] = sa.column("nspname")
        query = sa.select(name).select_from(sa.table("pg_namespace")).where(name == workspace_schema(workspace_id))
        async with self._pg.connect() as conn:
            return (await conn.execute(query)).first() is not None

    def _open_engine(self, workspace_id: str) -> AsyncEngine:
        self._damaged.pop(workspace_id, None)
        if self._pg is not None:
            engine = schema_engine(self._pg, workspace_schema(workspace_id))
            # The workspace's directory (its files: repos, spaces, chat credentials) goes with its database, as a
            # SQLite file's folder does: made here, while its schema exists, never by whoever makes a folder in it
            # (``DataDir.workspace_folder``), so a deletion that dropped the schema and removed it leaves it removed.
            self._datadir.workspace_dir(workspace_id).mkdir(mode=0o700, exist_ok=True)
        else:
            engine = _async_engine(self._datadir.workspace_db(workspace_id))
        self._workspaces[workspace_id] = engine
        return engine

    def _clear_abandoned_creations(self) -> None:
        """Remove staging directories of workspace creations whose process died (they never became visible)."""
        for entry in self._datadir.root.glob(f"{_CREATING_PREFIX}*"):
            try:
                pid = int(entry.name.rsplit("-", 2)[-2])
            except (ValueError, IndexError):
                continue
            if not pid_alive(pid):
                log.warning("removing %s, left by a workspace creation that was interrupted", entry.name)
                shutil.rmtree(entry, ignore_errors=True)

    async def workspace(self, workspace_id: str, *, create: bool = False) -> AsyncEngine:
        """The workspace's engine; opens (migrates and checks) it on first use.

        A missing workspace database is ``NotFound`` (``create`` makes it, for tests and tools that build
        workspaces by hand); a damaged one is ``DatabaseDamaged`` (``unavailable``)."""
        engine = self._workspaces.get(workspace_id)
        if engine is not None:
            return engine
        lock = self._locks.setdefault(workspace_id, asyncio.Lock())
        async with lock:
            engine = self._workspaces.get(workspace_id)
            if engine is not None:
                return engine
            damaged = self._damaged.get(workspace_id)
            if damaged is not None and time.monotonic() - damaged[0] < _RECHECK_DAMAGED_S:
                raise damaged[1]
            path = self._datadir.workspace_db(workspace_id)
            exists = await self._pg_workspace_exists(workspace_id) if self._pg_url is not None else path.exists()
            if not exists:
                if not create:
                    raise NotFound(f"workspace {workspace_id} has no database")
                await self._build_workspace(workspace_id, ())
                return self._open_engine(workspace_id)
            try:
                if self._pg_url is not None:
                    await self._migrate_pg_workspace(workspace_id)
                else:
                    await asyncio.to_thread(apply_migrations, path, self._workspace_sets)
            except DatabaseDamaged as exc:
                why = (
                    exc.message
                    if isinstance(exc, SchemaNewer)
                    else f"its database is damaged ({exc.message}); restore it from a backup"
                )
                err = DatabaseDamaged(f"workspace {workspace_id} is unavailable: {why}")
                if damaged is None:
                    log.error("%s", err.message)
                self._damaged[workspace_id] = (time.monotonic(), err)
                raise err from exc
            return self._open_engine(workspace_id)

    def sync_engine(self) -> Engine:
        """The pool of synchronous connections to PostgreSQL (the write path's, the sealed secrets'); only on
        PostgreSQL. Disposed with the databases."""
        if self._pg_sync is None:
            if self._pg_url is None:
                raise RuntimeError("only an install on PostgreSQL has a synchronous pool")
            self._pg_sync = postgresql_sync_engine(self._pg_url)
        return self._pg_sync

    def _pg_writer(self, schema: str) -> PgWriter:
        from hangar.core.pg_writer import PgWriter  # psycopg loads only for PostgreSQL

        if self._pg_threads is None:
            # As many threads as connections kept: write transactions run one at a time anyway (the write lock).
            self._pg_threads = ThreadPoolExecutor(max_workers=PG_POOL_SIZE, thread_name_prefix="pg-writer")
        return PgWriter(self.sync_engine(), self._pg_threads, schema, PG_WRITE_LOCK)

    async def writer(self, workspace_id: str) -> Writer:
        """The write path of the workspace database (``hangar.core.write_conn``; opened and migrated like
        ``workspace``)."""
        writer = self._writers.get(workspace_id)
        if writer is None:
            await self.workspace(workspace_id)
            made: Writer
            if self._pg_url is not None:
                made = self._pg_writer(workspace_schema(workspace_id))
            else:
                made = SqliteWriter(str(self._datadir.workspace_db(workspace_id)))
            writer = self._writers.setdefault(workspace_id, made)
        return writer

    @property
    def server_writes(self) -> asyncio.Lock:
        """This process's turn to write the server database, for writers on a hot path that would otherwise meet
        each other in SQLite's lock (a sign-in's: ``hangar.sso``). Each of these writers holds it around its write
        transaction, so within the process they queue here, waking as soon as the one before commits, instead of
        in SQLite's busy handler, which polls with sleeps of 1, 2, 5, 10 ms and more: far longer than the writes.
        It orders this process's writers only; other processes still meet in the database's own lock."""
        if self._server_writes is None:
            self._server_writes = asyncio.Lock()
        return self._server_writes

    def server_runner(self, *, busy_ms: int) -> Runner:
        """A synchronous write path of the server database (``hangar.core.write_conn.Runner``), for callers that
        cannot await; on SQLite a call waits at most ``busy_ms`` for another writer. Closed with the databases."""
        runner: Runner
        if self._pg_url is not None:
            runner = self._pg_writer(SERVER_SCHEMA)
        else:
            runner = SqliteRunner(self._datadir.server_db, busy_ms=busy_ms)
        self._runners.append(runner)
        return runner

    async def _reader(self, workspace_id: str | None) -> StampReader:
        reader = self._stamps.get(workspace_id)
        if reader is None:
            if workspace_id is None:
                path = self._datadir.server_db
            else:
                await self.workspace(workspace_id)
                path = self._datadir.workspace_db(workspace_id)
            reader = self._stamps.setdefault(workspace_id, StampReader(str(path)))
        return reader

    async def _small_read(self, workspace_id: str | None, sql: str, parameters: tuple[Any, ...] = ()) -> Any:
        """The first row of an indexed read of the server (``None``) or a workspace database: on the event loop,
        through a plain connection (SQLite's ``StampReader``, PostgreSQL's ``PgReader``)."""
        if self._pg_url is None:
            return (await self._reader(workspace_id)).fetch(sql, parameters)
        if workspace_id is None:
            schema = SERVER_SCHEMA
        else:
            await self.workspace(workspace_id)  # opened and migrated, or NotFound / damaged
            schema = workspace_schema(workspace_id)
        if self._pg_reader is None:
            from hangar.core.pg_writer import PgReader  # psycopg loads only for PostgreSQL

            self._pg_reader = PgReader(self._pg_url.set(drivername="postgresql").render_as_string(hide_password=False))
        return await self._pg_reader.fetchone(schema, sql, parameters)

    async def stamp(self, workspace_id: str | None, counter: str) -> int:
        """The change counter ``counter`` of the server database (``None``) or of a workspace database, as
        committed now by any process (see ``hangar.core.stamps``)."""
        row = await self._small_read(workspace_id, STAMP_QUERY, (counter,))
        # A database that predates the counter (mid-migration) reads as "always changed".
        return -1 if row is None else int(row[0])

    async def last_event_seq(self, workspace_id: str) -> int:
        """The sequence number of the workspace's newest domain event, committed by any process (0: none)."""
        row = await self._small_read(workspace_id, "SELECT max(seq) FROM domain_events")
        return int(row[0]) if row and row[0] is not None else 0

    async def forget_workspace(self, workspace_id: str) -> None:
        writer = self._writers.pop(workspace_id, None)
        if writer is not None:
            await writer.aclose()
        reader = self._stamps.pop(workspace_id, None)
        if reader is not None:
            reader.close()
        engine = self._workspaces.pop(workspace_id, None)
        if engine is not None and self._pg is None:  # PostgreSQL's engines share one pool, disposed at close
            await engine.dispose()

    async def drop_workspace(self, workspace_id: str) -> None:
        """Close this process's handles on the workspace's database and, on PostgreSQL, drop its schema (a
        no-op when gone already). SQLite's file goes with the workspace's directory, which its deleter removes."""
        await self.forget_workspace(workspace_id)
        if self._pg is not None:
            schema = workspace_schema(workspace_id)
            async with self._pg.begin() as conn:
                await conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
                # Its sealed secrets (``hangar.core.sealed``) go in the same transaction.
                await conn.execute(forget_sealed(workspace_id))

    def leases(self) -> Leases:
        """The process's driver leases on PostgreSQL (``hangar.core.leases``: one dedicated connection, opened at
        the first claim); only on PostgreSQL."""
        from hangar.core.leases import Leases  # psycopg loads only for PostgreSQL

        if self._pg_url is None:
            raise RuntimeError("leases are kept in PostgreSQL; SQLite installs lock control directories")
        if self._leases is None:
            self._leases = Leases(self._pg_url, read_lapse=self.read_lapse)
        return self._leases

    @property
    def postgresql_url(self) -> URL | None:
        """The PostgreSQL database every database here lives in (None: SQLite files)."""
        return self._pg_url

    @property
    def datadir(self) -> DataDir:
        return self._datadir

    def open_workspace_ids(self) -> list[str]:
        return list(self._workspaces)

    async def aclose(self) -> None:
        writers, self._writers = list(self._writers.values()), {}
        for writer in writers:
            await writer.aclose()
        for reader in self._stamps.values():
            reader.close()
        self._stamps.clear()
        runners, self._runners = self._runners, []
        for runner in runners:
            runner.close()
        if self._pg_reader is not None:
            await self._pg_reader.aclose()
            self._pg_reader = None
        if self._leases is not None:
            await self._leases.aclose()
            self._leases = None
        if self._pg_threads is not None:
            await asyncio.to_thread(self._pg_threads.shutdown, wait=True)
            self._pg_threads = None
        if self._pg_sync is not None:
            await asyncio.to_thread(self._pg_sync.dispose)
            self._pg_sync = None
        if self._pg is not None:
            await self._pg.dispose()
            self._pg = None
        else:
            for engine in list(self._workspaces.values()):
                await engine.dispose()
            if self._server is not None:
                await self._server.dispose()
        self._workspaces.clear()
        self._server = None
