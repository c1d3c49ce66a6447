"""Backups of an install whose records are in PostgreSQL, and their restore into an empty database.

The records are one item, ``postgresql.dump``: ``pg_dump --format=custom`` of Hangar's schemas (the server's
``hangar_server``, each workspace's ``ws_*`` or ``wh_*``), found through the database the data directory records.
The dump reads one snapshot, exported by a transaction that also reads which workspaces exist in it, so the
workspaces whose files are taken are exactly those the dump holds. Secrets, settings files and workspaces' files
come from the data directory as for SQLite (``hangar.backup.sqlite_source``); the manifest says ``database:
postgresql``.

A restore writes the files into the new data directory as for SQLite, checks the dump's entries (``check_dump``:
a backup file is input), runs ``pg_restore --single-transaction --exit-on-error --no-owner --no-privileges`` into
the database given (which must be empty: one holding any schema or table of its own is refused, naming it) and
records that database in the data directory. A failure at any
point leaves the database as it was (one transaction) and the folder absent.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import URL
from sqlalchemy.pool import NullPool

from hangar.backup.archive import ArchiveWriter, BackupRefused
from hangar.backup.pg_tools import find_tool, libpq_url, run_tool, tool_env
from hangar.backup.sqlite_source import SqliteSource, add_private_file, add_server_files, add_workspace_files
from hangar.backup.take import Source
from hangar.core.datadir import DataDir
from hangar.core.dbfailures import shown, unreachable
from hangar.core.postgresql import SERVER_SCHEMA, TRIGRAM_SCHEMA, ensure_pg_trgm, pg_connect_args, postgresql_url
from hangar.errors import InvalidArgs

T = TypeVar("T")

DUMP_ITEM = "postgresql.dump"
SCHEMA_PATTERNS = (SERVER_SCHEMA, "ws_*", "wh_*")


def _engine(url: URL) -> sa.Engine:
    # One connection for one command: no pool to outlive it.
    return sa.create_engine(postgresql_url(url), poolclass=NullPool, connect_args=pg_connect_args(url))


def _connect(engine: sa.Engine, url: URL) -> sa.Connection:
    try:
        return engine.connect()
    except sa.exc.OperationalError as exc:
        raise BackupRefused(unreachable(url, exc).message) from None


def server_major(conn: sa.Connection) -> int:
    """The major version of the server ``conn`` is on (``150004`` -> 15)."""
    return int(conn.execute(sa.text("SELECT current_setting('server_version_num')::int")).scalar_one()) // 10000


class PostgresSource:
    """The install of the data directory ``datadir`` whose records are in the PostgreSQL database ``url`` (with
    its password, when it has one)."""

    database = "postgresql"

    def __init__(self, datadir: DataDir, url: URL, *, bindir: Path | None = None) -> None:
        self.datadir = datadir
        self.url = url
        self.bindir = bindir
        self._pg_dump: Path | None = None

    def check(self) -> None:
        if not self.datadir.root.is_dir():
            raise FileNotFoundError(f"{self.datadir.root} is not a data directory")
        engine = _engine(self.url)
        try:
            with _connect(engine, self.url) as conn:
                major = server_major(conn)
                if not conn.execute(sa.text("SELECT to_regclass(:t)"), {"t": f"{SERVER_SCHEMA}.workspaces"}).scalar():
                    raise BackupRefused(f"the PostgreSQL database {shown(self.url)} holds no Hangar server records")
        finally:
            engine.dispose()
        self._pg_dump = find_tool("pg_dump", major, self.bindir)

    def write(self, writer: ArchiveWriter, scratch: Path, *, without_files: bool) -> None:
        assert self._pg_dump is not None, "check() first"
        dump = scratch / "dump"
        engine = _engine(self.url)
        try:
            with _connect(engine, self.url) as conn:
                conn = conn.execution_options(isolation_level="REPEATABLE READ")
                with conn.begin():
                    snapshot = conn.execute(sa.text("SELECT pg_export_snapshot()")).scalar_one()
                    # The identity part's table, read by name: a backup knows no part's stores.
                    named = conn.execute(sa.text(f"SELECT id FROM {SERVER_SCHEMA}.workspaces")).scalars().all()
                    argv = [str(self._pg_dump), "--format=custom", f"--file={dump}", f"--snapshot={snapshot}"]
                    argv += [f"--schema={p}" for p in SCHEMA_PATTERNS]
                    with tool_env(scratch, self.url) as env:
                        run_tool([*argv, f"--dbname={libpq_url(self.url)}"], env, "pg_dump", self.url)
        finally:
            engine.dispose()
        try:
            add_private_file(writer, dump, DUMP_ITEM)
        finally:
            dump.unlink(missing_ok=True)
        add_server_files(writer, self.datadir.root)
        for ws in sorted(str(n) for n in named):
            try:
                DataDir.check_workspace_id(ws)
            except InvalidArgs:
                continue
            ws_dir = self.datadir.root / ws
            # On PostgreSQL a workspace's folder exists once it keeps a file (a repository, chat credentials).
            if ws_dir.is_dir() and not ws_dir.is_symlink():
                writer.add_dir(ws, os.lstat(ws_dir).st_mode)
                add_workspace_files(writer, ws_dir, ws, without_files=without_files)


def source_for(datadir: DataDir, url: URL | None, *, bindir: Path | None = None) -> Source:
    """What a backup of the install at ``datadir`` takes: its SQLite files, or, when its records are in the
    PostgreSQL database ``url``, a dump of that."""
    return SqliteSource(datadir) if url is None else PostgresSource(datadir, url, bindir=bindir)


def check_empty(url: URL, bindir: Path | None) -> Path:
    """``BackupRefused`` unless the database ``url`` is empty (no schema or table of its own); the pg_restore
    to restore into it with."""
    engine = _engine(url)
    try:
        with _connect(engine, url) as conn:
            major = server_major(conn)
            found = conn.execute(
                sa.text(
                    "SELECT n.nspname, c.relname FROM pg_namespace n LEFT JOIN pg_class c ON c.relnamespace = n.oid "
                    "AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f') WHERE n.nspname NOT LIKE 'pg\\_%' "
                    "AND n.nspname <> 'information_schema' AND (n.nspname <> 'public' OR c.relname IS NOT NULL) "
                    "ORDER BY n.nspname = 'public', n.nspname, c.relname LIMIT 1"
                )
            ).first()
    finally:
        engine.dispose()
    if found is not None:
        schema, table = found
        held = f"the table {schema}.{table}" if schema == "public" else f"the schema {schema}"
        raise BackupRefused(
            f"the PostgreSQL database {shown(url)} is not empty: it holds {held}; a restore writes only into an "
            "empty database (create one, or drop what it holds)"
        )
    return find_tool("pg_restore", major, bindir)


# What a dump of Hangar's schemas holds (``pg_restore --list``): these kinds of entries, each in one of its
# schemas. A backup file is input: a dump holding anything else (another schema, an extension, a role's grants,
# a large object) is refused before a statement of it runs.
_ENTRY_KINDS = (
    "SEQUENCE OWNED BY",
    "FK CONSTRAINT",
    "SEQUENCE SET",
    "TABLE DATA",
    "CONSTRAINT",
    "FUNCTION",
    "SEQUENCE",
    "TRIGGER",
    "DEFAULT",
    "SCHEMA",
    "INDEX",
    "TABLE",
)
_DIGEST_SCHEMA = re.compile(r"^wh_[0-9a-f]{56}$")


def _hangars_schema(name: str) -> bool:
    """Whether ``name`` is a schema Hangar keeps records in (``hangar.core.postgresql``)."""
    if name == SERVER_SCHEMA or _DIGEST_SCHEMA.match(name):
        return True
    try:
        return name.startswith("ws_") and bool(DataDir.check_workspace_id(name[3:]))
    except InvalidArgs:
        return False


def check_dump(pg_restore: Path, dump: Path) -> None:
    """``BackupRefused`` naming the first entry of ``dump`` that a dump of Hangar's schemas never holds."""
    try:
        listed = subprocess.run([str(pg_restore), "--list", str(dump)], capture_output=True, text=True, check=False)
    except OSError as exc:
        raise BackupRefused(f"pg_restore cannot run: {exc.strerror}") from None
    if listed.returncode != 0:
        said = " ".join(listed.stderr.split())[-300:]
        raise BackupRefused(f"the backup's {DUMP_ITEM} is not a dump pg_restore reads: {said}")
    for line in listed.stdout.splitlines():
        if not line.strip() or line.startswith(";"):
            continue
        _, _, entry = line.partition("; ")
        rest = entry.split(" ", 2)[2] if entry.count(" ") >= 2 else ""  # past the catalog and object ids
        kind = next((k for k in _ENTRY_KINDS if rest.startswith(f"{k} ")), None)
        words = rest[len(kind) + 1 :].split(" ") if kind is not None else []
        schema = words[1] if kind == "SCHEMA" and len(words) > 1 else (words[0] if words else "")
        if kind is None or not _hangars_schema(schema):
            raise BackupRefused(
                f"the backup's {DUMP_ITEM} holds {rest[:120]!r}, which a dump of Hangar's schemas never holds"
            )


def restore_records(pg_restore: Path, dump: Path, url: URL, scratch: Path) -> None:
    """Restore ``dump`` (checked first: ``check_dump``) into the empty database ``url``, in one transaction.

    The code graph's trigram index names ``pg_trgm``'s operator class, and the extension is not in the dump (it is
    the database's, not a schema of Hangar's): it is created first, and dropped again when the restore fails, so
    the database is left as it was."""
    check_dump(pg_restore, dump)
    argv = [str(pg_restore), "--single-transaction", "--exit-on-error", "--no-owner", "--no-privileges"]
    created = _with_engine(url, lambda conn: ensure_pg_trgm(conn)[1])
    try:
        with tool_env(scratch, url) as env:
            run_tool([*argv, f"--dbname={libpq_url(url)}", str(dump)], env, "pg_restore", url)
    except BaseException:
        if created:
            _with_engine(url, lambda conn: conn.exec_driver_sql(f"DROP SCHEMA {TRIGRAM_SCHEMA} CASCADE"))
        raise


def _with_engine(url: URL, work: Callable[[sa.Connection], T]) -> T:
    """``work`` in one transaction on a connection of its own to ``url``."""
    engine = _engine(url)
    try:
        with _connect(engine, url) as conn, conn.begin():
            return work(conn)
    finally:
        engine.dispose()
