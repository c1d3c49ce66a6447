"""Databases: the server database and one database per workspace, SQLAlchemy 2 Core on SQLite.

Each part owns its tables and ships its own Alembic migration set (a directory with ``versions/``). A set is
applied to the server database or to every workspace database when that database is opened, and each set keeps
its own version table (``alembic_version_<name>``), so parts evolve their schemas without touching each other.

Migrating is serialized and atomic. Alembic keeps its migration context in module globals, so two threads of one
process migrating two databases at once mix their connections (seen as a segfault inside SQLite and databases
stamped at head without their tables): one lock per process. Two processes migrating one file wait for each other
on a lock file beside it. Python's sqlite3 module commits before every DDL statement unless told not to, so a kill
mid-migration used to leave tables without their version stamp ("table ... already exists" at every later start):
migrations run with the driver's own transaction handling off, inside one ``BEGIN IMMEDIATE`` ... ``COMMIT``.

A new workspace's database is built, migrated and seeded under a temporary name and renamed into place in one
step, so a workspace directory either holds a complete database or does not exist. Every database's schema is
checked against its parts' table definitions when it opens; a damaged workspace database makes that workspace
answer ``unavailable`` (and is reported in the log) while the rest of the server serves.

PostgreSQL (in progress, see README): ``postgresql_engine`` opens a pooled async engine on a
``postgresql+psycopg://`` URL and ``apply_postgresql_migrations`` brings such a database to the head of the same
migration sets, in one transaction (PostgreSQL's DDL is transactional) serialized across processes by an
advisory lock. ``Databases(..., postgresql=URL)`` keeps every database in that one PostgreSQL database, a schema
each (the server's ``hangar_server``, a workspace's ``ws_<id>``): the tables of a workspace keep no workspace
column, so a schema gives each its namespace with the same migrations and the same stores, and a forgotten filter
cannot leak one workspace's rows into another. Engines of one ``Databases`` share one pool; each transaction sets
its schema (``SET LOCAL search_path``). Other processes' events are announced by NOTIFY on that database
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
import fcntl
import hashlib
import logging
import os
import secrets
import shutil
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import sqlalchemy as sa
from alembic.config import Config
from alembic.runtime.environment import EnvironmentContext
from alembic.script import ScriptDirectory
from alembic.script.revision import ResolutionError
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry, NullPool

from hangar.core.datadir import DataDir
from hangar.core.dbfailures import DatabaseDamaged as DatabaseDamaged  # re-exported: callers import it from here
from hangar.core.dbfailures import SchemaNewer, unreachable
from hangar.core.fileio import fsync_dir, pid_alive
from hangar.core.sqlite_writer import SqliteRunner, SqliteWriter, connect
from hangar.core.stamps import STAMP_QUERY, StampReader
from hangar.core.write_conn import Runner, WriteConnection, Writer
from hangar.errors import Conflict, NotFound

if TYPE_CHECKING:
    from hangar.core.leases import Leases
    from hangar.core.pg_writer import PgReader, PgWriter

log = logging.getLogger(__name__)

Scope = Literal["server", "workspace"]
Seed = Callable[[WriteConnection], Any]  # writes a new database's first rows (``write_conn.transaction`` each)

# Alembic's migration context is process-global: one migration at a time in this process.
_MIGRATING = threading.Lock()
# How long a damaged workspace answers ``unavailable`` before its database is checked again (an operator may
# have restored it meanwhile).
_RECHECK_DAMAGED_S = 30.0
_CREATING_PREFIX = ".creating-"
# Keys of PostgreSQL advisory locks (one bigint namespace per database): the migration lock, and the write lock
# ``write_transaction`` takes (SQLite's database-wide write lock, which PostgreSQL does not have).
_PG_MIGRATION_LOCK = 0x68616E6761720001
_PG_WRITE_LOCK = 0x68616E6761720002
# The pool of one PostgreSQL engine: a few connections kept, more opened under load (the server's stores hold a
# connection only for one transaction).
_PG_POOL_SIZE = 5
_PG_MAX_OVERFLOW = 10
_PG_CONNECT_TIMEOUT_S = 10
SERVER_SCHEMA = "hangar_server"
_SCHEMA_OPTION = "hangar_schema"  # the execution option naming the schema of an engine's transactions


@dataclass(frozen=True)
class MigrationSet:
    """One part's migrations for one kind of database, and the table definitions they must produce."""

    name: str
    scope: Scope
    location: Path
    tables: tuple[sa.MetaData, ...] = ()

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


def _migration_connect(dbapi_conn: DBAPIConnection, record: ConnectionPoolEntry) -> None:
    _sqlite_pragmas(dbapi_conn, record)
    # The driver would otherwise commit before each DDL statement; the BEGIN below holds the whole migration.
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA busy_timeout=120000")  # another process may be migrating this file
    cur.close()


def _migration_begin(conn: Connection) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE")


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (created 0600) shared by every process; released when the block ends.

    A separate file, never the database: closing any descriptor of a database file drops SQLite's own locks."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def apply_migrations(path: Path, sets: Sequence[MigrationSet], *, seed: Sequence[Seed] = ()) -> None:
    """Bring the SQLite file at ``path`` to the head of every migration set in one transaction, check its
    schema, then run ``seed`` (synchronous). Raises ``DatabaseDamaged`` when the result is not a complete
    database."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with _MIGRATING, _file_lock(path.with_name(path.name + ".lock")):
        engine = create_engine(f"sqlite:///{path}", poolclass=NullPool)
        event.listen(engine, "connect", _migration_connect)
        event.listen(engine, "begin", _migration_begin)
        try:
            with engine.begin() as conn:
                for mset in sets:
                    _upgrade(conn, mset, path.name)
        except sa.exc.SQLAlchemyError as exc:
            raise DatabaseDamaged(f"{path.name} cannot be migrated: {_first_line(exc)}") from exc
        finally:
            engine.dispose()
        problems = schema_problems(path, sets)
        if problems:
            raise DatabaseDamaged(f"{path.name} is missing " + "; ".join(problems))
        if seed:
            db = connect(str(path), busy_ms=10_000)
            try:
                for fn in seed:
                    fn(db)
            finally:
                db.close()
    path.chmod(0o600)


def _first_line(exc: BaseException) -> str:
    return str(getattr(exc, "orig", None) or exc).splitlines()[0][:300]


def schema_problems(path: Path, sets: Sequence[MigrationSet]) -> list[str]:
    """What the SQLite database at ``path`` lacks of the tables and columns its migration sets declare."""
    engine = create_engine(f"sqlite:///{path}", poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return _missing(conn, sets)
    finally:
        engine.dispose()


def _missing(conn: Connection, sets: Sequence[MigrationSet], schema: str | None = None) -> list[str]:
    """What the database behind ``conn`` (in ``schema``, else the default one) lacks of the tables and columns its
    migration sets declare (any dialect)."""
    inspector = sa.inspect(conn)
    present = set(inspector.get_table_names(schema))
    problems: list[str] = []
    for mset in sets:
        for metadata in mset.tables:
            # Not ``sorted_tables``: sorting resolves foreign keys, and a part's table may reference another
            # part's (``chat_space_links.cc_space_id`` -> ``spaces.id``), which is not in its metadata.
            for table in metadata.tables.values():
                if table.name not in present:
                    problems.append(f"table {table.name} ({mset.name})")
                    continue
                have = {c["name"] for c in inspector.get_columns(table.name, schema)}
                missing = [c.name for c in table.columns if c.name not in have]
                if missing:
                    problems.append(f"columns {', '.join(missing)} of {table.name} ({mset.name})")
    return problems


def _upgrade(conn: Connection, mset: MigrationSet, name: str) -> None:
    """Bring ``mset`` to its head in the database behind ``conn`` (``name`` in messages); ``SchemaNewer`` when
    the database is at a revision this code does not know."""
    cfg = Config()
    cfg.set_main_option("script_location", str(mset.location))
    script = ScriptDirectory(str(mset.location))

    def upgrade(rev: Any, _context: Any) -> Any:
        for current in rev:
            try:
                script.revision_map.get_revision(current)
            except ResolutionError:
                raise SchemaNewer(name, mset.name, current, str(script.get_current_head())) from None
        return script._upgrade_revs("head", rev)

    with EnvironmentContext(cfg, script, fn=upgrade, destination_rev="head") as env:
        env.configure(connection=conn, version_table=f"alembic_version_{mset.name}", render_as_batch=True)
        with env.begin_transaction():
            env.run_migrations()


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
            await conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_PG_WRITE_LOCK)))
        try:
            yield conn
        except BaseException:
            await conn.rollback()
            raise
        await conn.commit()


def _async_engine(path: Path) -> AsyncEngine:
    engine = create_async_engine(f"sqlite+aiosqlite:///{path}", pool_size=4, max_overflow=8)
    event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    return engine


def postgresql_url(url: str | URL) -> URL:
    """``url`` as a psycopg 3 URL (``postgresql://`` and ``postgresql+psycopg://`` both name it); ``ValueError``
    naming what is wrong for any other database or driver."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        raise ValueError(f"not a PostgreSQL URL: {parsed.render_as_string(hide_password=True)}")
    if parsed.get_driver_name() not in ("psycopg", "psycopg2") and "+" in parsed.drivername:
        raise ValueError(f"unsupported PostgreSQL driver {parsed.get_driver_name()!r}: use postgresql+psycopg://")
    return parsed.set(drivername="postgresql+psycopg")


def postgresql_engine(url: str | URL) -> AsyncEngine:
    """A pooled async engine on the PostgreSQL database at ``url`` (psycopg 3). Connections are checked before
    use, so one the server closed (a restart, an idle timeout) is replaced instead of failing a request."""
    return create_async_engine(
        postgresql_url(url),
        pool_size=_PG_POOL_SIZE,
        max_overflow=_PG_MAX_OVERFLOW,
        pool_pre_ping=True,
        connect_args=pg_connect_args(url),
    )


def pg_connect_args(url: str | URL) -> dict[str, Any]:
    """How long a connection attempt may take (``connect_timeout`` in the URL wins): an address that drops
    packets would otherwise hold a start for the system's TCP timeout, minutes."""
    return {} if "connect_timeout" in make_url(url).query else {"connect_timeout": _PG_CONNECT_TIMEOUT_S}


def workspace_schema(workspace_id: str) -> str:
    """The PostgreSQL schema of a workspace: ``ws_<id>``, or ``wh_<digest of the id>`` for an id too long for a
    name (63 bytes); the two prefixes never meet."""
    DataDir.check_workspace_id(workspace_id)
    if len(workspace_id) <= 60:
        return f"ws_{workspace_id}"
    return "wh_" + hashlib.sha256(workspace_id.encode()).hexdigest()[:56]


def _enter_schema(conn: Connection) -> None:
    """At the start of each transaction on an engine bound to a schema: make that schema the one its statements
    (and the triggers they fire) name. ``SET LOCAL`` ends with the transaction, so a pooled connection never
    carries one workspace's schema into another's transaction."""
    schema = conn.get_execution_options().get(_SCHEMA_OPTION)
    if schema is None:
        return
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(f"SET LOCAL search_path TO {conn.dialect.identifier_preparer.quote_identifier(schema)}")
    finally:
        cursor.close()


def _schema_engine(base: AsyncEngine, schema: str) -> AsyncEngine:
    """An engine on ``base``'s pool whose transactions run in ``schema`` (never dispose it: the pool is shared)."""
    return base.execution_options(**{_SCHEMA_OPTION: schema})


def apply_postgresql_migrations(
    url: str | URL, sets: Sequence[MigrationSet], *, schema: str | None = None, seed: Sequence[Seed] = ()
) -> None:
    """Bring the PostgreSQL database at ``url`` (its ``schema``, created when missing; else the default schema) to
    the head of every migration set in one transaction, check it, and write ``seed`` in that same transaction.
    Processes migrating one database wait for each other on an advisory lock held by the transaction. Raises
    ``DatabaseDamaged`` when the result is not a complete database."""
    engine = create_engine(postgresql_url(url), poolclass=NullPool, connect_args=pg_connect_args(url))
    name = engine.url.database or "(default)"
    if schema is not None:
        name += f" schema {schema}"
    try:
        conn = engine.connect()
    except sa.exc.DBAPIError as exc:
        engine.dispose()
        raise unreachable(engine.url, exc) from exc
    try:
        with _MIGRATING, conn, conn.begin():
            conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_PG_MIGRATION_LOCK)))
            if schema is not None:
                quoted = conn.dialect.identifier_preparer.quote_identifier(schema)
                conn.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {quoted}")
                # Tables, version stamps and trigger functions are created in the schema, as in a database of its own.
                conn.exec_driver_sql(f"SET LOCAL search_path TO {quoted}")
            for mset in sets:
                _upgrade(conn, mset, f"database {name}")
            problems = _missing(conn, sets, schema)
            if problems:
                raise DatabaseDamaged(f"database {name} is missing " + "; ".join(problems))
            if seed:
                from hangar.core.pg_writer import PgConnection  # psycopg loads only for PostgreSQL

                raw = conn.connection.driver_connection
                assert raw is not None
                # Nested: the seeds' transactions are this one (the new schema is invisible until it commits).
                seeding = PgConnection(raw, schema or "public", _PG_WRITE_LOCK, nested=True)
                for fn in seed:
                    fn(seeding)
    except sa.exc.SQLAlchemyError as exc:
        raise DatabaseDamaged(f"database {name} cannot be migrated: {_first_line(exc)}") from exc
    finally:
        engine.dispose()


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
        self._server_sets = [m for m in migrations if m.scope == "server"]
        self._workspace_sets = [m for m in migrations if m.scope == "workspace"]
        self._server: AsyncEngine | None = None
        self._workspaces: dict[str, AsyncEngine] = {}
        self._writers: dict[str, Writer] = {}
        self._runners: list[Runner] = []
        self._locks: dict[str, asyncio.Lock] = {}
        self._damaged: dict[str, tuple[float, DatabaseDamaged]] = {}
        self._stamps: dict[str | None, StampReader] = {}

    async def open(self) -> None:
        if self._pg_url is not None:
            await asyncio.to_thread(apply_postgresql_migrations, self._pg_url, self._server_sets, schema=SERVER_SCHEMA)
            self._pg = postgresql_engine(self._pg_url)
            event.listen(self._pg.sync_engine, "begin", _enter_schema)
            self._server = _schema_engine(self._pg, SERVER_SCHEMA)
            return
        await asyncio.to_thread(apply_migrations, self._datadir.server_db, self._server_sets)
        await asyncio.to_thread(self._clear_abandoned_creations)
        self._server = _async_engine(self._datadir.server_db)

    @property
    def server(self) -> AsyncEngine:
        if self._server is None:
            raise RuntimeError("Databases.open() has not been awaited")
        return self._server

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
            engine = _schema_engine(self._pg, workspace_schema(workspace_id))
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

    def _pg_writer(self, schema: str) -> PgWriter:
        from hangar.core.pg_writer import PgWriter  # psycopg loads only for PostgreSQL

        if self._pg_sync is None or self._pg_threads is None:
            assert self._pg_url is not None
            self._pg_sync = create_engine(
                self._pg_url,
                pool_size=_PG_POOL_SIZE,
                max_overflow=_PG_MAX_OVERFLOW,
                pool_pre_ping=True,
                connect_args=pg_connect_args(self._pg_url),
            )
            # As many threads as connections kept: write transactions run one at a time anyway (the write lock).
            self._pg_threads = ThreadPoolExecutor(max_workers=_PG_POOL_SIZE, thread_name_prefix="pg-writer")
        return PgWriter(self._pg_sync, self._pg_threads, schema, _PG_WRITE_LOCK)

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

    def leases(self) -> Leases:
        """The process's driver leases on PostgreSQL (``hangar.core.leases``: one dedicated connection, opened at
        the first claim); only on PostgreSQL."""
        from hangar.core.leases import Leases  # psycopg loads only for PostgreSQL

        if self._pg_url is None:
            raise RuntimeError("leases are kept in PostgreSQL; SQLite installs lock control directories")
        if self._leases is None:
            self._leases = Leases(self._pg_url)
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
