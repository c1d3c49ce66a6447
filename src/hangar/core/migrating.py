"""Migrating a database to the head of its parts' migration sets, on SQLite or PostgreSQL, and checking it.

Each part owns its tables and ships its own Alembic migration set (a directory with ``versions/``). A set is
applied to the server database or to every workspace database when that database is opened, and each set keeps
its own version table (``alembic_version_<name>``), so parts evolve their schemas without touching each other.

Migrating is serialized and atomic. Alembic keeps its migration context in module globals, so two threads of one
process migrating two databases at once mix their connections (seen as a segfault inside SQLite and databases
stamped at head without their tables): one lock per process. Two processes migrating one file wait for each other
on a lock file beside it. Python's sqlite3 module commits before every DDL statement unless told not to, so a kill
mid-migration used to leave tables without their version stamp ("table ... already exists" at every later start):
migrations run with the driver's own transaction handling off, inside one ``BEGIN IMMEDIATE`` ... ``COMMIT``. On
PostgreSQL (whose DDL is transactional) a database is migrated in one transaction, serialized across processes by
an advisory lock. A database at a revision this code does not know is refused (``SchemaNewer``).

Each database also records the Hangar version that last migrated it (``hangar_release``, one row, written in the
migration's transaction when a revision was applied or nothing was recorded yet). Like Alembic's version tables
it belongs to the migrating, not to a part: a refusal names the newer version beside this one.

``HANGAR_TEST_KILL_AFTER_MIGRATION_STEP=N`` (tests only) makes the process kill itself (SIGKILL) right after the
Nth migration step it applies, before its transaction commits, saying so on stderr: the upgrade tests stop a
migration at every step this way and show the next start finishes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import signal
import sqlite3
import sys
import threading
import urllib.parse
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import sqlalchemy as sa
from sqlalchemy import Connection, create_engine, event
from sqlalchemy.engine import URL
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.pool import ConnectionPoolEntry, NullPool

import hangar
from hangar.core.dbfailures import DatabaseDamaged, SchemaNewer, unreachable
from hangar.core.postgresql import PG_MIGRATION_LOCK, PG_WRITE_LOCK, pg_connect_args, postgresql_url
from hangar.core.sqlite_writer import connect
from hangar.core.write_conn import WriteConnection

if TYPE_CHECKING:
    from alembic.runtime.migration import MigrationContext, MigrationInfo

Scope = Literal["server", "workspace"]
Seed = Callable[[WriteConnection], Any]  # writes a new database's first rows (``write_conn.transaction`` each)

# Alembic's migration context is process-global: one migration at a time in this process.
MIGRATING = threading.Lock()

RELEASE_TABLE = "hangar_release"  # the Hangar version that last migrated the database (one row, id 1)
KILL_AFTER_STEP = "HANGAR_TEST_KILL_AFTER_MIGRATION_STEP"
_steps_applied = 0  # migration steps this process applied (for the test hook), under MIGRATING


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


def sqlite_pragmas(dbapi_conn: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
    cur = dbapi_conn.cursor()
    # WAL lets readers proceed during a write; NORMAL sync is durable across process crashes (kill -9)
    # and only risks the last transactions on power loss.
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.close()


def _migration_connect(dbapi_conn: DBAPIConnection, record: ConnectionPoolEntry) -> None:
    sqlite_pragmas(dbapi_conn, record)
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
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _migration_engine(path: Path) -> sa.Engine:
    """An engine on the SQLite file at ``path`` whose transactions hold a whole migration."""
    engine = create_engine(f"sqlite:///{path}", poolclass=NullPool)
    event.listen(engine, "connect", _migration_connect)
    event.listen(engine, "begin", _migration_begin)
    return engine


def apply_migrations(path: Path, sets: Sequence[MigrationSet], *, seed: Sequence[Seed] = ()) -> None:
    """Bring the SQLite file at ``path`` to the head of every migration set in one transaction, check its
    schema, then run ``seed`` (synchronous). Raises ``DatabaseDamaged`` when the result is not a complete
    database."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with MIGRATING, _file_lock(path.with_name(path.name + ".lock")):
        if not at_head(path, sets):
            engine = _migration_engine(path)
            try:
                with engine.begin() as conn:
                    _upgrade_all(conn, sets, path.name)
            except sa.exc.SQLAlchemyError as exc:
                raise DatabaseDamaged(f"{path.name} cannot be migrated: {first_line(exc)}") from exc
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


def first_line(exc: BaseException) -> str:
    return str(getattr(exc, "orig", None) or exc).splitlines()[0][:300]


def schema_problems(path: Path, sets: Sequence[MigrationSet]) -> list[str]:
    """What the SQLite database at ``path`` lacks of the tables and columns its migration sets declare."""
    engine = create_engine(f"sqlite:///{path}", poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return missing_tables(conn, sets)
    finally:
        engine.dispose()


def missing_tables(conn: Connection, sets: Sequence[MigrationSet], schema: str | None = None) -> list[str]:
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


def migrate_to(path: Path, sets: Sequence[MigrationSet], revisions: Mapping[str, str | None]) -> None:
    """Bring the new SQLite file at ``path`` to ``revisions`` (a revision of each set named; ``None`` or a set not
    named: none of it) in one transaction: a database as an earlier version of Hangar made it, for rows written
    then (a workspace export) to be migrated to the head by ``apply_migrations``. The revisions are known ones
    (``known_revision``)."""
    with MIGRATING:
        engine = _migration_engine(path)
        try:
            with engine.begin() as conn:
                for mset in sets:
                    if (rev := revisions.get(mset.name)) is not None:
                        _upgrade(conn, mset, path.name, None, rev)
        finally:
            engine.dispose()


_REVISION_LINE = re.compile(r'^(revision|down_revision) = (None|"([A-Za-z0-9_]+)")$', re.MULTILINE)
_declared_heads: dict[Path, str | None] = {}


def declared_head(location: Path) -> str | None:
    """The head revision of the migration set at ``location``, read from its version files without Alembic: the
    one revision no other names as its parent. None when the files do not say it plainly (a file without exactly
    one ``revision = "..."`` and one ``down_revision = ...`` line, a merge, several heads): Alembic then decides."""
    if location in _declared_heads:
        return _declared_heads[location]
    revisions: set[str] = set()
    parents: set[str] = set()
    head: str | None = None
    try:
        for file in (location / "versions").glob("*.py"):
            lines = [(m.group(1), m.group(3)) for m in _REVISION_LINE.finditer(file.read_text())]
            found = dict(lines)
            if len(lines) != 2 or len(found) != 2 or not found["revision"]:
                break
            revisions.add(found["revision"])
            if found["down_revision"]:
                parents.add(found["down_revision"])
        else:
            heads = revisions - parents
            head = next(iter(heads)) if len(heads) == 1 and parents <= revisions else None
    except OSError:
        head = None
    _declared_heads[location] = head
    return head


def at_head(path: Path, sets: Sequence[MigrationSet]) -> bool:
    """Whether the SQLite file at ``path`` records every set at its declared head and the release that migrated
    it: then there is nothing to migrate, and Alembic (its import and its migration context) is not needed. Read
    with the standard library, read-only; any doubt (no file, a table missing, an error) is False."""
    heads = [(mset.name, declared_head(mset.location)) for mset in sets]
    if not path.is_file() or any(head is None for _name, head in heads):
        return False
    try:
        db = sqlite3.connect(f"file:{urllib.parse.quote(str(path))}?mode=ro", uri=True)
    except sqlite3.Error:
        return False
    try:
        for name, head in heads:
            if db.execute(f'SELECT version_num FROM "alembic_version_{name}"').fetchall() != [(head,)]:
                return False
        return db.execute(f"SELECT version FROM {RELEASE_TABLE} WHERE id = 1").fetchone() is not None
    except sqlite3.Error:
        return False
    finally:
        db.close()


def known_revision(mset: MigrationSet, revision: str) -> bool:
    """Whether ``revision`` is one of ``mset``'s (a revision it does not know was made by a newer version)."""
    from alembic.script import ScriptDirectory
    from alembic.script.revision import ResolutionError

    try:
        return ScriptDirectory(str(mset.location)).revision_map.get_revision(revision) is not None
    except ResolutionError:
        return False


def head_revision(mset: MigrationSet) -> str:
    from alembic.script import ScriptDirectory

    return str(ScriptDirectory(str(mset.location)).get_current_head())


def _upgrade_all(conn: Connection, sets: Sequence[MigrationSet], name: str) -> None:
    """Bring every set to its head in the database behind ``conn`` (in its transaction), and record this Hangar's
    version when it applied a revision or the database recorded none."""
    recorded = _recorded_release(conn)
    applied = sum(_upgrade(conn, mset, name, recorded) for mset in sets)
    if applied or recorded is None:
        # Made after the parts' tables, so a new database's first pages hold the same tables as before it existed.
        conn.exec_driver_sql(
            f"CREATE TABLE IF NOT EXISTS {RELEASE_TABLE} (id INTEGER PRIMARY KEY, version VARCHAR(64) NOT NULL, "
            "migrated_at VARCHAR(40) NOT NULL)"
        )
        conn.exec_driver_sql(f"DELETE FROM {RELEASE_TABLE}")
        conn.execute(
            sa.text(f"INSERT INTO {RELEASE_TABLE} (id, version, migrated_at) VALUES (1, :version, :at)"),
            {"version": hangar.__version__, "at": datetime.now(UTC).isoformat(timespec="seconds")},
        )


def _recorded_release(conn: Connection) -> str | None:
    """The version the database behind ``conn`` records as the last to migrate it; None when it records none (or
    predates the record: the failed read is undone to its savepoint, the migration's transaction goes on)."""
    try:
        with conn.begin_nested():
            value = conn.exec_driver_sql(f"SELECT version FROM {RELEASE_TABLE} WHERE id = 1").scalar()
    except sa.exc.DBAPIError:
        return None
    return None if value is None else str(value)


def _upgrade(conn: Connection, mset: MigrationSet, name: str, recorded: str | None, destination: str = "head") -> int:
    """Bring ``mset`` to ``destination`` (its head) in the database behind ``conn`` (``name`` in messages) and
    count the steps applied; ``SchemaNewer`` (naming ``recorded``, the version that last migrated it) when the
    database is at a revision this code does not know."""
    # Imported here: a process whose databases are at head never needs Alembic (``at_head``).
    from alembic.config import Config
    from alembic.runtime.environment import EnvironmentContext
    from alembic.script import ScriptDirectory
    from alembic.script.revision import ResolutionError

    cfg = Config()
    cfg.set_main_option("script_location", str(mset.location))
    script = ScriptDirectory(str(mset.location))
    applied = 0

    def upgrade(rev: Any, _context: Any) -> Any:
        for current in rev:
            try:
                script.revision_map.get_revision(current)
            except ResolutionError:
                raise SchemaNewer(name, mset.name, current, str(script.get_current_head()), recorded) from None
        return script._upgrade_revs(destination, rev)

    def stepped(
        ctx: MigrationContext, step: MigrationInfo, heads: Collection[Any], run_args: Mapping[str, Any]
    ) -> None:
        nonlocal applied
        applied += 1
        _after_step(f"{mset.name} {step.up_revision_id} of {name}")

    with EnvironmentContext(cfg, script, fn=upgrade, destination_rev=destination) as env:
        env.configure(
            connection=conn,
            version_table=f"alembic_version_{mset.name}",
            render_as_batch=True,
            on_version_apply=stepped,
        )
        with env.begin_transaction():
            env.run_migrations()
    return applied


def _after_step(what: str) -> None:
    """The test hook (``KILL_AFTER_STEP``): count the step, and die here, uncommitted, at the one asked for."""
    global _steps_applied
    _steps_applied += 1
    wanted = os.environ.get(KILL_AFTER_STEP)
    if wanted and wanted.isdigit() and int(wanted) == _steps_applied:
        sys.stderr.write(f"hangar: {KILL_AFTER_STEP}: killed after migration step {_steps_applied} ({what})\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)


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
        with MIGRATING, conn, conn.begin():
            conn.execute(sa.select(sa.func.pg_advisory_xact_lock(PG_MIGRATION_LOCK)))
            if schema is not None:
                quoted = conn.dialect.identifier_preparer.quote_identifier(schema)
                conn.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {quoted}")
                # Tables, version stamps and trigger functions are created in the schema, as in a database of its own.
                conn.exec_driver_sql(f"SET LOCAL search_path TO {quoted}")
            _upgrade_all(conn, sets, f"database {name}")
            problems = missing_tables(conn, sets, schema)
            if problems:
                raise DatabaseDamaged(f"database {name} is missing " + "; ".join(problems))
            if seed:
                from hangar.core.pg_writer import PgConnection  # psycopg loads only for PostgreSQL

                raw = conn.connection.driver_connection
                assert raw is not None
                # Nested: the seeds' transactions are this one (the new schema is invisible until it commits).
                seeding = PgConnection(raw, schema or "public", PG_WRITE_LOCK, nested=True)
                for fn in seed:
                    fn(seeding)
    except sa.exc.SQLAlchemyError as exc:
        raise DatabaseDamaged(f"database {name} cannot be migrated: {first_line(exc)}") from exc
    finally:
        engine.dispose()
