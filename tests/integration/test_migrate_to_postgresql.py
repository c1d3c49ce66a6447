"""``hangar admin migrate-to-postgresql`` on an install a real server made: every table arrives whole (compared
here row by row through the parts' own table definitions, independently of the command's checksums), keys
continue after the copied ones, and each refusal (a server using the data directory, a target holding records,
a source a newer Hangar migrated or that is damaged) is one line and leaves both sides as they were."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from hangar import __version__
from hangar.core.dblocation import URL_FILE, exclusively
from hangar.core.postgresql import SERVER_SCHEMA, postgresql_url, workspace_schema
from hangar.server.parts import all_parts
from tests.support.postgres import PostgresCluster
from tests.support.rpc import RpcClient
from tests.support.runs import assert_completed
from tests.support.server import running_server
from tests.support.templates import HOP, written

# Its source is an install's SQLite files.
pytestmark = pytest.mark.sqlite_only("copies an install's SQLite files")

HANGAR = str(Path(sys.executable).parent / "hangar")
SETS = [m for p in all_parts() for m in p.migrations]


def hangar(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "HANGAR_DATABASE_URL"}
    return subprocess.run([HANGAR, *argv], env=env, capture_output=True, text=True, timeout=300, check=False)


def migrate(data: Path, url: str) -> subprocess.CompletedProcess[str]:
    return hangar("admin", "migrate-to-postgresql", "--from", str(data), "--database-url", url)


def refused(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


async def make_install(data: Path) -> dict[str, Any]:
    """An install as a real server leaves it: two workspaces, users, spaces, messages, tickets, a pipeline run
    and the events and audit rows all of that wrote."""
    async with running_server(data) as srv:
        first = await srv.new_workspace("first")
        second = await srv.new_workspace("second")
        await srv.new_user_token(first, "member", name="ann")
        await srv.new_user_token(second, "admin", name="bo")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            space = (await c.call("spaces.create", workspace_id=first, title="Zürich ☃ plans"))["id"]
            for n in range(30):
                await c.call(
                    "messages.post", workspace_id=first, space_id=space, content=f"message {n} «ß»", metadata={"n": n}
                )
            parent = (await c.call("tickets.create", workspace_id=first, title="parent"))["id"]
            await c.call("tickets.create", workspace_id=first, title="child", parentId=parent)
            await c.call("spaces.create", workspace_id=second, title="other")
            await c.call("pipelines.templates.create", workspace_id=second, template=HOP)
            run = await c.call("pipelines.runs.start", workspace_id=second, templateId="hop", payload={"k": [1, None]})
            for _ in range(400):
                got = await c.call("pipelines.runs.get", workspace_id=second, runId=run["runId"])
                if got["status"] == "completed":
                    break
                await asyncio.sleep(0.05)
            assert_completed(got)
    return {"first": first, "second": second, "space": space}


def _declared() -> dict[str, dict[str, sa.Table]]:
    found: dict[str, dict[str, sa.Table]] = {"server": {}, "workspace": {}}
    for mset in SETS:
        for metadata in mset.tables:
            found[mset.scope].update(metadata.tables)
    return found


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return value


def _rows(conn: sa.Connection, table: sa.Table) -> list[tuple[Any, ...]]:
    return sorted((tuple(_plain(v) for v in row) for row in conn.execute(sa.select(table))), key=repr)


def _raw(conn: sa.Connection, name: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in conn.exec_driver_sql(f"SELECT * FROM {name}"))


def compare_every_table(source: Path, pg_url: str, schema: str, scope: str) -> int:
    """Every table of the SQLite database at ``source`` equals its copy in ``schema``, read through the parts'
    table definitions (typed: timestamps, JSON, booleans); the stamps and counters compared raw. Returns how
    many rows were compared."""
    lite = sa.create_engine(f"sqlite:///{source}")
    pg = sa.create_engine(postgresql_url(pg_url)).execution_options(schema_translate_map={None: schema})
    compared = 0
    try:
        with lite.connect() as a, pg.connect() as b:
            # Tables of records: not the code graph's FTS5 trigram index (a virtual table and its shadow tables),
            # which PostgreSQL keeps as a GIN index.
            names = {
                r[0]
                for r in a.exec_driver_sql(
                    "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table'"
                )
            }
            declared = _declared()[scope]
            # sealed_secrets is empty on SQLite and receives the secrets files, sealed
            # (tests/integration/test_sealed_secrets_servers.py).
            for name in sorted(n for n in names - {"sealed_secrets"} if not n.startswith("sqlite")):
                if name in declared:
                    left, right = _rows(a, declared[name]), _rows(b, declared[name])
                else:
                    left, right = _raw(a, name), _raw(b, f'"{schema}".{name}')
                assert left == right, f"{schema}.{name} differs"
                compared += len(left)
    finally:
        lite.dispose()
        pg.dispose()
    return compared


async def test_an_install_a_server_made_arrives_whole_and_keys_continue(
    tmp_path: Path, pg_cluster: PostgresCluster, pg_url: str
) -> None:
    data = tmp_path / "data"
    made = await make_install(data)
    first_db = data / made["first"] / "workspace.db"
    # The newest message deleted: SQLite never hands its key out again, and neither may PostgreSQL.
    with sqlite3.connect(first_db) as db:
        db.execute("DELETE FROM messages WHERE seq = (SELECT max(seq) FROM messages)")
        used = dict(db.execute("SELECT name, seq FROM sqlite_sequence").fetchall())
    assert used["messages"] >= 30 and used["domain_events"] > 0
    # Folders that hold a ``workspace.db`` but are no recorded workspace: copied as nothing, left as they were.
    (data / "rigs").mkdir(exist_ok=True)
    (data / "rigs" / "workspace.db").touch()
    (data / "stray-folder").mkdir()
    (data / "stray-folder" / "workspace.db").write_bytes(first_db.read_bytes())

    # A password in the URL's query (the test cluster trusts the socket, so it is not checked) is never shown.
    secret = "Qpw-8sZ2nK"
    done = migrate(data, make_url(pg_url).update_query_dict({"password": secret}).render_as_string(False))
    assert secret not in done.stdout + done.stderr and secret not in (data / URL_FILE).read_text()
    assert done.returncode == 0, done.stderr
    report = {line.split(":")[0]: line for line in done.stdout.splitlines() if ": " in line and " rows, " in line}
    first, second = workspace_schema(made["first"]), workspace_schema(made["second"])
    assert report[f"{first}.messages"].startswith(f"{first}.messages: 29 rows, checksum ")
    assert report[f"{second}.pipeline_runs"].startswith(f"{second}.pipeline_runs: 1 rows")
    assert "every table's count and checksum match" in done.stdout
    for stray in ("rigs", "stray-folder"):
        assert workspace_schema(stray) not in done.stdout
    assert (data / "rigs" / "workspace.db").stat().st_size == 0  # not migrated as if it were a workspace's

    rows = compare_every_table(data / "server.db", pg_url, SERVER_SCHEMA, "server")
    rows += compare_every_table(first_db, pg_url, first, "workspace")
    rows += compare_every_table(data / made["second"] / "workspace.db", pg_url, second, "workspace")
    assert rows > 100

    dbname = str(make_url(pg_url).database)
    with psycopg.connect(pg_cluster.dsn(dbname)) as conn:
        for table, column in (("messages", "seq"), ("domain_events", "seq"), ("audit_log", "id")):
            sequence = f"""pg_get_serial_sequence('"{first}".{table}', '{column}')"""
            nxt = conn.execute(f"SELECT nextval({sequence})").fetchone()
            assert nxt == (used[table] + 1,), (table, nxt, used[table])
    # The data directory now opens the copy: a server started on it with no URL serves the copied records.
    recorded = make_url((data / URL_FILE).read_text().strip())
    assert (recorded.database, recorded.query) == (dbname, make_url(pg_url).query)
    async with running_server(data) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        listed = await c.call("messages.list", workspace_id=made["first"], space_id=made["space"])
        assert [m["content"] for m in listed["messages"]][-1] == "message 28 «ß»"
        spaces = await c.call("spaces.list", workspace_id=made["first"])
        assert [s["title"] for s in spaces["spaces"]] == ["Zürich ☃ plans"]
        # A new message continues after the copied keys, and after the deleted one.
        posted = await c.call("messages.post", workspace_id=made["first"], space_id=made["space"], content="after")
        assert posted["seq"] == used["messages"] + 2


async def test_the_copy_is_refused_while_a_server_uses_the_data_directory(tmp_path: Path, pg_url: str) -> None:
    data = tmp_path / "data"
    async with running_server(data):
        line = refused(migrate(data, pg_url))
    assert line == (
        f"hangar: the data directory {data} is in use by a running server or hangar command (it holds "
        f"{data / 'in-use.lock'}): stop it first"
    )
    assert not (data / URL_FILE).exists()
    # And the other way round: while a copy holds the directory, no command opens it.
    with exclusively(data):
        line = refused(hangar("admin", "owner-token", "--data-dir", str(data)))
    assert "is being copied to PostgreSQL (hangar admin migrate-to-postgresql)" in line


def test_a_target_that_holds_records_is_refused_and_left_alone(
    tmp_path: Path, pg_cluster: PostgresCluster, pg_url: str
) -> None:
    # Records on the target: an owner made by a command pointed at it.
    other = tmp_path / "other"
    assert hangar("admin", "owner-token", "--data-dir", str(other), "--database-url", pg_url).returncode == 0
    data = tmp_path / "data"
    assert hangar("admin", "owner-token", "--data-dir", str(data)).returncode == 0
    dbname = str(make_url(pg_url).database)
    with psycopg.connect(pg_cluster.dsn(dbname)) as conn:
        before = conn.execute(f"SELECT id FROM {SERVER_SCHEMA}.users ORDER BY id").fetchall()
    line = refused(migrate(data, pg_url))
    assert line.startswith(f"hangar: the PostgreSQL database postgresql://hangar@/{dbname}")
    assert f"is not empty: {SERVER_SCHEMA}.devices holds 1 row(s)" in line
    with psycopg.connect(pg_cluster.dsn(dbname)) as conn:
        assert conn.execute(f"SELECT id FROM {SERVER_SCHEMA}.users ORDER BY id").fetchall() == before
    assert not (data / URL_FILE).exists()


def test_a_source_a_newer_hangar_migrated_or_a_damaged_one_is_refused(
    tmp_path: Path, pg_cluster: PostgresCluster, pg_url: str
) -> None:
    data = tmp_path / "data"
    assert hangar("admin", "owner-token", "--data-dir", str(data)).returncode == 0
    with sqlite3.connect(data / "server.db") as db:
        db.execute("UPDATE alembic_version_identity SET version_num = 'i9999'")
    line = refused(migrate(data, pg_url))
    assert line.startswith("hangar: the server database cannot be copied: server.db was migrated by a newer Hangar")
    assert f"revision i9999, which this Hangar ({__version__}) does not know" in line
    dbname = str(make_url(pg_url).database)
    with psycopg.connect(pg_cluster.dsn(dbname)) as conn:
        schemas = conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'hangar%' OR nspname LIKE 'ws%'")
        assert schemas.fetchall() == []  # nothing was written to the target
    # A workspace database that lost a table: named, and refused.
    ws = tmp_path / "ws"
    assert hangar("pipeline", "run", str(written(HOP, tmp_path)), "--data-dir", str(ws)).returncode == 0
    (workspace,) = [p.parent.name for p in ws.glob("*/workspace.db")]
    with sqlite3.connect(ws / workspace / "workspace.db") as db:
        db.execute("DROP TABLE tickets")
    line = refused(migrate(ws, pg_url))
    assert line.startswith(f"hangar: workspace {workspace} cannot be copied: workspace.db is missing table tickets")
    assert not (ws / URL_FILE).exists()
