"""``hangar admin backup`` and ``restore`` of an install whose records are in PostgreSQL, through the real
command line against a real server on the session's cluster.

A round trip from a running server (two workspaces, a user, spaces, messages, a pipeline run, chat credentials, a
repository, the dev-domain CA, a worktree with symlinks) restores into another, empty database every table of
every Hangar schema (count and checksum, ``hangar.core.dbdigest``) and every file, and a fresh server on it signs
the old credential in. The tools run through a spy folder (``HANGAR_PG_BINDIR``) that records what each was given:
the password is never on a command line, in a tool's environment or in any output. Refusals: a database that is
not empty (a schema, a table), a PostgreSQL backup without --database-url, pg_dump or pg_restore missing or
older than the server, a failing pg_restore; each leaves no backup file, no data directory and the database as
it was."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from hangar.backup.archive import FORMAT, ArchiveWriter, Manifest
from hangar.core.dbdigest import JSON_TYPES, Fingerprint, fingerprint
from hangar.core.secretkey import KEY_FILE
from tests.integration.test_backup_refusals import refused
from tests.integration.test_backup_restore import kept, populate
from tests.integration.test_chat_ops import NO_TRANSPORT
from tests.support.postgres import PostgresCluster, server_bindir
from tests.support.rpc import RpcClient
from tests.support.server import running_server

pytestmark = pytest.mark.slow

HANGAR = str(Path(sys.executable).parent / "hangar")
# What a spy tool records of each run: its arguments, whether PGPASSWORD reached it, its password file's mode.
_SPY = """#!/bin/sh
{{ printf 'argv:'; printf ' %s' "$@"; printf '\\n'
  echo "PGPASSWORD:${{PGPASSWORD:+set}}"
  [ -n "$PGPASSFILE" ] && echo "passfile:$(stat -c %a "$PGPASSFILE")"; }} >> {log}
exec {real} "$@"
"""


def admin(*args: str, password: str | None, bindir: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HANGAR_DATABASE_URL", "PGPASSWORD")}
    env["HANGAR_PG_BINDIR"] = str(bindir)
    if password is not None:
        env["PGPASSWORD"] = password
    return subprocess.run([HANGAR, "admin", *args], capture_output=True, text=True, env=env, timeout=600)


def restore(backup: Path, into: Path, database: str | None, bindir: Path) -> subprocess.CompletedProcess[str]:
    """``hangar admin restore`` of ``backup`` into the folder ``into`` and the database URL ``database``."""
    given = ["--database-url", database] if database is not None else []
    return admin("restore", str(backup), "--data-dir", str(into), *given, password=None, bindir=bindir)


def spy_bindir(folder: Path) -> Path:
    """A folder whose pg_dump and pg_restore record how they were run, then run the cluster's own."""
    folder.mkdir()
    for tool in ("pg_dump", "pg_restore"):
        path = folder / tool
        path.write_text(_SPY.format(log=folder / "calls.log", real=server_bindir() / tool))
        path.chmod(0o755)
    return folder


def fake_tool(folder: Path, tool: str, script: str) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / tool).write_text(f"#!/bin/sh\n{script}\n")
    (folder / tool).chmod(0o755)
    return folder


def url(cluster: PostgresCluster, db: str, role: str, password: str | None = None) -> str:
    secret = f":{password}" if password is not None else ""
    return f"postgresql://{role}{secret}@/{db}?host={cluster.socket_dir}"


def tables(cluster: PostgresCluster, db: str) -> dict[str, Fingerprint]:
    """Every table of every Hangar schema of ``db``, by ``schema.table``: its count and checksum."""
    found: dict[str, Fingerprint] = {}
    with psycopg.connect(cluster.dsn(db)) as conn:
        columns: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for schema, table, column, kind in conn.execute(
            "SELECT c.table_schema, c.table_name, c.column_name, c.data_type FROM information_schema.columns c "
            "JOIN information_schema.tables t USING (table_schema, table_name) WHERE t.table_type = 'BASE TABLE' "
            "AND (c.table_schema = 'hangar_server' OR c.table_schema LIKE 'ws\\_%' OR c.table_schema LIKE 'wh\\_%') "
            "ORDER BY 1, 2, c.ordinal_position"
        ):
            columns.setdefault((schema, table), []).append((column, kind))
        for (schema, table), cols in columns.items():
            listed = sql.SQL(", ").join(
                sql.SQL("{}::text").format(sql.Identifier(c)) if k in JSON_TYPES else sql.Identifier(c) for c, k in cols
            )
            rows = conn.execute(sql.SQL("SELECT {} FROM {}").format(listed, sql.Identifier(schema, table)))
            found[f"{schema}.{table}"] = fingerprint(rows.fetchall(), [k for _, k in cols])
    return found


def schemas(cluster: PostgresCluster, db: str) -> list[str]:
    with psycopg.connect(cluster.dsn(db)) as conn:
        rows = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema' "
            "ORDER BY 1"
        ).fetchall()
    return [str(r[0]) for r in rows]


@pytest.fixture
def databases(pg_cluster: PostgresCluster) -> Iterator[tuple[str, str]]:
    """Two fresh databases: the install's, and an empty one to restore into."""
    with pg_cluster.database() as source, pg_cluster.database() as target:
        yield source, target


async def test_round_trip_keeps_every_table_and_file_and_never_shows_the_password(
    tmp_path: Path, pg_cluster: PostgresCluster, databases: tuple[str, str]
) -> None:
    source, target = databases
    role, password = pg_cluster.login_role(source)
    other_role, other_password = pg_cluster.login_role(target)
    data, restored, backup = tmp_path / "data", tmp_path / "restored", tmp_path / "out" / "hangar.backup"
    backup.parent.mkdir()
    spy = spy_bindir(tmp_path / "bin")
    with_password = url(pg_cluster, source, role, password)
    async with (
        running_server(data, parts=NO_TRANSPORT, database_url=with_password) as srv,
        RpcClient(srv.ws_url, srv.owner_token) as c,
    ):
        ws, other, said = await populate(tmp_path, c, srv)
        # The data directory records the database without its password; the command takes it from PGPASSWORD.
        done = await asyncio.to_thread(
            admin, "backup", "--to", str(backup), "--data-dir", str(data), password=password, bindir=spy
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("backed up ") and str(backup) in done.stdout
        assert stat.S_IMODE(backup.stat().st_mode) == 0o600
        before = tables(pg_cluster, source)
        files_before = kept(data, [ws, other])
        token = srv.owner_token
    content = backup.read_bytes()
    assert b"never in a backup" not in content and password.encode() not in content
    assert not (data / "server.db").exists()

    done = admin(
        "restore",
        str(backup),
        "--data-dir",
        str(restored),
        "--database-url",
        url(pg_cluster, target, other_role),
        password=other_password,
        bindir=spy,
    )
    assert done.returncode == 0, done.stderr
    assert "restored " in done.stdout
    after = tables(pg_cluster, target)
    assert len({name.split(".")[0] for name in after}) == 3  # the server's schema and both workspaces'
    assert after == before  # every table of every schema: the same rows
    assert kept(restored, [ws, other]) == files_before
    assert os.readlink(restored / ws / "worktrees" / "t-1" / "escape") == str(tmp_path / "outside-secret")
    # The secrets are sealed rows of the dump; their key is in no backup: the operator copies it in.
    assert (data / KEY_FILE).exists() and not (restored / KEY_FILE).exists()
    assert (data / KEY_FILE).read_bytes() not in content
    shutil.copy(data / KEY_FILE, restored / KEY_FILE)
    assert not (restored / "postgresql.dump").exists() and not (restored / "server.db").exists()
    recorded = (restored / "database-url").read_text()
    assert recorded.startswith(f"postgresql://{other_role}@/{target}?")  # the database given, without its password
    assert other_password not in recorded and stat.S_IMODE((restored / "database-url").stat().st_mode) == 0o600

    calls = (spy / "calls.log").read_text()
    runs = [line for line in calls.splitlines() if line.startswith("argv:") and line != "argv: --version"]
    # The dump; its entries listed and checked before the restore runs any; the restore.
    assert len(runs) == 3 and "--snapshot=" in runs[0] and "--list" in runs[1] and "--single-transaction" in runs[2]
    assert password not in calls and other_password not in calls  # never on a command line
    assert "PGPASSWORD:set" not in calls and calls.count("passfile:600") == 2  # the listing connects nowhere
    for said_text in (done.stdout, done.stderr):
        assert password not in said_text and other_password not in said_text

    async with (
        running_server(
            restored, parts=NO_TRANSPORT, database_url=url(pg_cluster, target, other_role, other_password)
        ) as again,
        RpcClient(again.ws_url, token) as c2,
    ):
        assert {"alpha", "beta"} <= {w["name"] for w in await c2.call("workspaces.list")}
        spaces = await c2.call("spaces.list", workspace_id=ws)
        listed = await c2.call("messages.list", workspace_id=ws, space_id=spaces["spaces"][0]["id"])
        assert {m["id"] for m in listed["messages"]} >= set(said[:5])
        assert (await c2.call("repos.list", workspace_id=ws))["repos"][0]["name"] == "app"
        assert again.ctx.secrets.get("backup.test") == "a-server-secret"  # opened with the copied key


@pytest.fixture
async def taken(tmp_path: Path, pg_cluster: PostgresCluster, databases: tuple[str, str]) -> tuple[Path, Path, str, str]:
    """A backup of a small install on PostgreSQL: (the file, its data directory, the install's URL, the empty
    database's URL); the superuser signs in without a password on the cluster's socket."""
    source, target = databases
    data = tmp_path / "data"
    async with running_server(data, parts=NO_TRANSPORT, database_url=url(pg_cluster, source, "hangar")) as srv:
        await srv.new_workspace("alpha")
    backup = tmp_path / "small.backup"
    done = admin("backup", "--to", str(backup), "--data-dir", str(data), password=None, bindir=server_bindir())
    assert done.returncode == 0, done.stderr
    return backup, data, url(pg_cluster, source, "hangar"), url(pg_cluster, target, "hangar")


async def test_restore_refuses_a_database_that_is_not_empty_naming_what_it_holds(
    tmp_path: Path, pg_cluster: PostgresCluster, taken: tuple[Path, Path, str, str]
) -> None:
    backup, _data, installed, empty = taken
    restored = tmp_path / "restored"
    bindir = server_bindir()
    said = refused(restore(backup, restored, installed, bindir))
    assert said.startswith("the PostgreSQL database ") and "is not empty: it holds the schema hangar_server" in said
    target = empty.split("/")[3].split("?")[0]
    with psycopg.connect(pg_cluster.dsn(target), autocommit=True) as conn:
        conn.execute("CREATE TABLE public.someone_elses (n int)")
    said = refused(restore(backup, restored, empty, bindir))
    assert "is not empty: it holds the table public.someone_elses" in said
    assert not restored.exists()
    with psycopg.connect(pg_cluster.dsn(target), autocommit=True) as conn:
        conn.execute("DROP TABLE public.someone_elses")
    # Empty again (its public schema has no table): restored.
    done = restore(backup, restored, empty, bindir)
    assert done.returncode == 0, done.stderr
    assert "hangar_server" in schemas(pg_cluster, target)


async def test_a_postgresql_backup_needs_a_database_to_restore_into(
    tmp_path: Path, taken: tuple[Path, Path, str, str]
) -> None:
    backup = taken[0]
    said = refused(restore(backup, tmp_path / "r", None, server_bindir()))
    assert said == (
        "the backup holds its records as a PostgreSQL dump (postgresql.dump): give --database-url of an empty "
        "PostgreSQL database to restore them into"
    )
    assert not (tmp_path / "r").exists()


async def test_missing_or_older_tools_are_refused_naming_them(
    tmp_path: Path, pg_cluster: PostgresCluster, taken: tuple[Path, Path, str, str]
) -> None:
    backup, data, _installed, empty = taken
    out = tmp_path / "again.backup"
    nothing = tmp_path / "no-tools"
    nothing.mkdir()
    said = refused(admin("backup", "--to", str(out), "--data-dir", str(data), password=None, bindir=nothing))
    assert said.startswith(f"pg_dump is not installed in {nothing} (HANGAR_PG_BINDIR): ")
    assert not out.exists()
    major = int(server_bindir().parent.name)
    old = fake_tool(tmp_path / "old", "pg_dump", f'echo "pg_dump (PostgreSQL) {major - 1}.4"')
    fake_tool(old, "pg_restore", f'echo "pg_restore (PostgreSQL) {major - 1}.4"')
    said = refused(admin("backup", "--to", str(out), "--data-dir", str(data), password=None, bindir=old))
    assert said.startswith(f"pg_dump must be of PostgreSQL {major} or newer, the server's version, and ")
    assert f"{old / 'pg_dump'} is version {major - 1}" in said and not out.exists()

    restored = tmp_path / "restored"
    target = empty.split("/")[3].split("?")[0]
    for bindir, start in ((nothing, "pg_restore is not installed in "), (old, "pg_restore must be of PostgreSQL ")):
        said = refused(restore(backup, restored, empty, bindir))
        assert said.startswith(start) and not restored.exists()
    # One that runs and fails: nothing restored, no data directory, the database still empty.
    failing = fake_tool(
        tmp_path / "failing",
        "pg_restore",
        # Its version and the dump's listing are the real ones; the restore itself fails.
        f'case "$1" in --version|--list) exec {server_bindir() / "pg_restore"} "$@";; esac\n'
        'echo "pg_restore: error: could not execute query: out of luck" >&2; exit 1',
    )
    said = refused(restore(backup, restored, empty, failing))
    assert said == "pg_restore failed: pg_restore: error: could not execute query: out of luck"
    assert not restored.exists() and schemas(pg_cluster, target) == ["public"]
    with psycopg.connect(pg_cluster.dsn(target)) as conn:  # pg_trgm, created for the dump's index, dropped again
        assert conn.execute("SELECT extname FROM pg_extension WHERE extname = 'pg_trgm'").fetchall() == []
    assert not list(tmp_path.glob(".restored.restoring-*"))


async def test_a_dump_holding_more_than_hangars_schemas_is_refused_before_any_of_it_runs(
    tmp_path: Path, pg_cluster: PostgresCluster, taken: tuple[Path, Path, str, str]
) -> None:
    """A backup file is input: a dump with a schema of its own (what a crafted file could carry) never runs."""
    _backup, _data, installed, empty = taken
    source, target = (u.split("/")[3].split("?")[0] for u in (installed, empty))
    with psycopg.connect(pg_cluster.dsn(source), autocommit=True) as conn:
        conn.execute("CREATE SCHEMA evil")
        conn.execute("CREATE TABLE evil.planted (n int)")
    dump = tmp_path / "evil.dump"
    argv = [str(server_bindir() / "pg_dump"), "--format=custom", f"--file={dump}", "--schema=hangar_server"]
    subprocess.run([*argv, "--schema=evil", f"--dbname={pg_cluster.dsn(source)}"], check=True, timeout=120)
    hostile = tmp_path / "evil.backup"
    with hostile.open("wb") as out:
        writer = ArchiveWriter(out)
        writer.add_bytes("postgresql.dump", dump.read_bytes(), 0o600)
        writer.finish(Manifest(FORMAT, "0.0.1", "2026-01-01T00:00:00+00:00", "postgresql", False, tuple(writer.items)))
    said = refused(restore(hostile, tmp_path / "r", empty, server_bindir()))
    assert said.startswith("the backup's postgresql.dump holds 'SCHEMA - evil ")
    assert said.endswith("which a dump of Hangar's schemas never holds")
    assert schemas(pg_cluster, target) == ["public"] and not (tmp_path / "r").exists()
