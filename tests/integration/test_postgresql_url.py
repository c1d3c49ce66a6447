"""``--database-url`` / ``HANGAR_DATABASE_URL`` as an operator meets them, through the real command line against
the suite's throwaway PostgreSQL cluster: every record in the one database, the command line and the server on
the same records, and each way a database cannot be used refused in one line that names what failed and never
shows the password."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
import sqlalchemy as sa
from alembic.script import ScriptDirectory
from sqlalchemy.engine import make_url

from hangar import __version__
from hangar.core.datadir import DataDir
from hangar.core.db import Databases
from hangar.core.dbfailures import DatabaseDamaged
from hangar.core.dblocation import URL_FILE
from hangar.core.migrating import RELEASE_TABLE, apply_migrations, apply_postgresql_migrations
from hangar.core.postgresql import SERVER_SCHEMA, postgresql_url
from hangar.server.parts import all_parts
from tests.support.dialects import database_url
from tests.support.postgres import PostgresCluster
from tests.support.templates import HOP, written

HANGAR = str(Path(sys.executable).parent / "hangar")
SERVER_SETS = [m for p in all_parts() for m in p.migrations if m.scope == "server"]
SECRET = "pw-Zq8rT1vX"  # the password every refused URL carries: no output may show it


def hangar(*argv: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "HANGAR_DATABASE_URL"}
    return subprocess.run(
        [HANGAR, *argv], env={**base, **(env or {})}, capture_output=True, text=True, timeout=timeout, check=False
    )


def serve(data: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``hangar serve`` expected to refuse before it listens (a timeout would mean it started)."""
    return hangar("serve", "--data-dir", str(data), "--port", "0", "--no-site", "--no-prepare-pack", *extra, env=env)


def one_line_refusal(done: subprocess.CompletedProcess[str], code: int = 1) -> str:
    """The refusal's one line on stderr (exit ``code``), which must not carry the password."""
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert SECRET not in done.stderr + done.stdout
    return lines[0]


def with_password(url: str, user: str, password: str) -> str:
    return make_url(url).set(username=user, password=password).render_as_string(hide_password=False)


def test_a_url_that_is_not_postgresql_is_refused_naming_its_scheme(tmp_path: Path) -> None:
    line = one_line_refusal(serve(tmp_path / "d", "--database-url", f"mysql://app:{SECRET}@db.example/hangar"), 2)
    assert "mysql:// is not a database Hangar keeps its records in" in line and "postgresql://" in line
    # The variable is read by every command that opens the databases, and refused the same way.
    env = {"HANGAR_DATABASE_URL": f"sqlite:///{tmp_path}/x.db?password={SECRET}"}
    line = one_line_refusal(hangar("admin", "owner-token", "--data-dir", str(tmp_path / "d"), env=env), 2)
    assert "sqlite:// is not a database Hangar keeps its records in" in line
    assert not (tmp_path / "d" / "server.db").exists()


def test_an_unreachable_server_is_named_by_its_socket_or_host(tmp_path: Path) -> None:
    nowhere = tmp_path / "no-server-here"
    url = f"postgresql://app:{SECRET}@/hangar?host={nowhere}"
    line = one_line_refusal(serve(tmp_path / "d", "--database-url", url))
    assert line.startswith("the server cannot start: cannot connect to the PostgreSQL database ")
    assert f"postgresql://app@/hangar?host={nowhere}" in line and "No such file or directory" in line
    # A closed TCP port on loopback: refused at once, the host and port named.
    env = {"HANGAR_DATABASE_URL": f"postgresql://app:{SECRET}@127.0.0.1:1/hangar"}
    line = one_line_refusal(hangar("admin", "owner-token", "--data-dir", str(tmp_path / "d"), env=env))
    assert 'connection to server at "127.0.0.1", port 1 failed: Connection refused' in line


def test_a_wrong_password_an_unknown_role_and_a_missing_database_are_each_named(
    tmp_path: Path, pg_cluster: PostgresCluster, pg_url: str
) -> None:
    dbname = str(make_url(pg_url).database)
    role, _password = pg_cluster.login_role(dbname)
    wrong = one_line_refusal(serve(tmp_path / "d", "--database-url", with_password(pg_url, role, SECRET)))
    assert f'password authentication failed for user "{role}"' in wrong
    unknown = one_line_refusal(serve(tmp_path / "d", "--database-url", with_password(pg_url, "nobody_here", SECRET)))
    assert 'password authentication failed for user "nobody_here"' in unknown
    missing = make_url(pg_url).set(database="no_such_database", password=SECRET).render_as_string(hide_password=False)
    line = one_line_refusal(serve(tmp_path / "d", "--database-url", missing))
    assert 'database "no_such_database" does not exist' in line
    # Nothing was recorded for a database that never opened, and no SQLite database was made instead.
    assert not (tmp_path / "d" / URL_FILE).exists() and not (tmp_path / "d" / "server.db").exists()


def test_commands_and_the_server_share_the_database_the_data_directory_records(
    tmp_path: Path, pg_cluster: PostgresCluster, pg_url: str
) -> None:
    dbname = str(make_url(pg_url).database)
    role, password = pg_cluster.login_role(dbname)
    url = with_password(pg_url, role, password)
    data = tmp_path / "d"
    set_limit = hangar(
        "admin", "setting", "rigs.memoryBudgetMb", "4096", "--data-dir", str(data), "--database-url", url
    )
    assert set_limit.returncode == 0, set_limit.stderr
    # Recorded without its password, owner-only; no SQLite database beside it.
    recorded = data / URL_FILE
    assert (recorded.stat().st_mode & 0o777) == 0o600
    # Quoted, so that it reads back exactly.
    host = quote(str(pg_cluster.socket_dir), safe="")
    assert recorded.read_text().strip() == f"postgresql://{role}@/{dbname}?host={host}"
    assert password not in recorded.read_text()
    assert not (data / "server.db").exists()
    # A command given no URL opens the recorded database; the password comes from PostgreSQL's own variable.
    shown = hangar("admin", "setting", "rigs.memoryBudgetMb", "--data-dir", str(data), env={"PGPASSWORD": password})
    assert (shown.returncode, shown.stdout.strip()) == (0, "4096"), shown.stderr
    # Without any password the recorded database refuses, and says so in one line.
    line = one_line_refusal(hangar("admin", "setting", "rigs.memoryBudgetMb", "--data-dir", str(data)))
    assert line.startswith(f"hangar: cannot connect to the PostgreSQL database postgresql://{role}@/{dbname}")
    # The row is in PostgreSQL, in the server's schema.
    with psycopg.connect(pg_cluster.dsn(dbname)) as conn:
        value = conn.execute(
            f"SELECT value FROM {SERVER_SCHEMA}.server_settings WHERE key = 'rigs.memoryBudgetMb'"
        ).fetchone()
    assert value is not None and "4096" in str(value[0])


def test_a_sqlite_install_is_not_opened_on_postgresql_before_it_is_copied(tmp_path: Path, pg_url: str) -> None:
    data = tmp_path / "d"
    made = hangar("admin", "owner-token", "--data-dir", str(data))
    assert made.returncode == 0 and (data / "server.db").exists(), made.stderr
    line = one_line_refusal(serve(data, "--database-url", pg_url))
    assert f"the data directory {data} holds a SQLite install (server.db)" in line
    assert "hangar admin migrate-to-postgresql" in line


def _stamp_unknown_revision_sqlite(path: Path) -> None:
    apply_migrations(path, SERVER_SETS)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE alembic_version_identity SET version_num = 'i9999'")


def test_a_database_migrated_by_a_newer_hangar_refuses_to_start_on_both_dialects(
    tmp_path: Path, pg_cluster: PostgresCluster, pg_url: str
) -> None:
    head = next(m for m in SERVER_SETS if m.name == "identity")
    known = sorted(p.name.split("_")[0] for p in (head.location / "versions").glob("i*.py"))[-1]
    sentence = (
        "was migrated by a newer Hangar: its identity schema is at revision i9999, which this Hangar "
        f"({__version__}) does not know (the newest it knows is {known}); run the Hangar version that migrated it, "
        "or a newer one"
    )
    # SQLite: the server database in the data directory.
    data = tmp_path / "sqlite"
    data.mkdir()
    _stamp_unknown_revision_sqlite(data / "server.db")
    line = one_line_refusal(serve(data))
    assert line == f"the server cannot start: server.db {sentence}"
    line = one_line_refusal(hangar("admin", "owner-token", "--data-dir", str(data)))
    assert line == f"hangar: server.db {sentence}"
    # PostgreSQL: the server's schema, the same sentence.
    apply_postgresql_migrations(pg_url, SERVER_SETS, schema=SERVER_SCHEMA)
    dbname = str(make_url(pg_url).database)
    with psycopg.connect(pg_cluster.dsn(dbname)) as conn:
        conn.execute(f"UPDATE {SERVER_SCHEMA}.alembic_version_identity SET version_num = 'i9999'")
    line = one_line_refusal(serve(tmp_path / "pg", "--database-url", pg_url))
    assert line == f"the server cannot start: database {dbname} schema {SERVER_SCHEMA} {sentence}"
    # The version that migrated it, as the schema records it, is named beside this one.
    with psycopg.connect(pg_cluster.dsn(dbname)) as conn:
        conn.execute(f"UPDATE {SERVER_SCHEMA}.{RELEASE_TABLE} SET version = '9.1.0'")
    named = (
        "was migrated by Hangar 9.1.0: its identity schema is at revision i9999, which this Hangar "
        f"({__version__}) does not know (the newest it knows is {known}); run Hangar 9.1.0 or newer"
    )
    line = one_line_refusal(serve(tmp_path / "pg", "--database-url", pg_url))
    assert line == f"the server cannot start: database {dbname} schema {SERVER_SCHEMA} {named}"


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_variable_names_no_database(tmp_path: Path, value: str) -> None:
    done = hangar("admin", "owner-token", "--data-dir", str(tmp_path / "d"), env={"HANGAR_DATABASE_URL": value})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "d" / "server.db").exists() and not (tmp_path / "d" / URL_FILE).exists()


def test_the_database_secrets_leave_the_environment_the_processes_started_inherit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hangar.cli.root import settings_from

    monkeypatch.setenv("HANGAR_DATABASE_URL", f"postgresql://app:{SECRET}@db.example/hangar")
    monkeypatch.setenv("PGPASSWORD", SECRET)
    settings = settings_from(data_dir=tmp_path)
    assert settings.given_database_url is not None and SECRET in settings.given_database_url
    assert settings.database_password == SECRET
    child = subprocess.run(["env"], capture_output=True, text=True, check=True)
    assert SECRET not in child.stdout
    assert SECRET not in repr(settings)


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
async def test_a_workspace_a_newer_hangar_migrated_answers_unavailable_with_the_same_sentence(
    tmp_path: Path, dialect: str, request: pytest.FixtureRequest
) -> None:
    url = database_url(dialect, request)
    datadir = DataDir(tmp_path / "d").ensure()
    sets = [m for p in all_parts() for m in p.migrations]
    dbs = Databases(datadir, sets, postgresql=url)
    await dbs.open()
    await dbs.workspace("w1", create=True)
    await dbs.aclose()
    if url is None:
        name = "workspace.db"
        with sqlite3.connect(datadir.workspace_db("w1")) as db:
            db.execute("UPDATE alembic_version_workspace SET version_num = 'w9999'")
    else:
        dbname = str(make_url(url).database)
        name = f"database {dbname} schema ws_w1"
        engine = sa.create_engine(postgresql_url(url))
        with engine.begin() as conn:
            conn.exec_driver_sql("UPDATE ws_w1.alembic_version_workspace SET version_num = 'w9999'")
        engine.dispose()
    workspace_set = next(m for m in sets if m.name == "workspace")
    head = ScriptDirectory(str(workspace_set.location)).get_current_head()
    again = Databases(datadir, sets, postgresql=url)
    await again.open()
    try:
        with pytest.raises(DatabaseDamaged) as refused:
            await again.workspace("w1")
    finally:
        await again.aclose()
    assert refused.value.message == (
        f"workspace w1 is unavailable: {name} was migrated by a newer Hangar: its workspace schema is at revision "
        f"w9999, which this Hangar ({__version__}) does not know (the newest it knows is {head}); run the Hangar "
        "version that migrated it, or a newer one"
    )


def test_a_pipeline_runs_on_postgresql_from_the_command_line(
    tmp_path: Path, pg_cluster: PostgresCluster, pg_url: str
) -> None:
    data = tmp_path / "d"
    run = hangar(
        "pipeline", "run", str(written(HOP, tmp_path)), "--data-dir", str(data), "--database-url", pg_url, "--json"
    )
    assert run.returncode == 0, run.stderr
    ran = json.loads(run.stdout)
    assert ran["status"] == "completed"
    # Shown by a command given no URL: the data directory names the database.
    show = hangar("pipeline", "show", ran["runId"], "--data-dir", str(data))
    assert show.returncode == 0, show.stderr
    assert json.loads(show.stdout)["status"] == "completed"
    assert not (data / "server.db").exists() and not list(data.glob("*/workspace.db"))
    with psycopg.connect(pg_cluster.dsn(str(make_url(pg_url).database))) as conn:
        (schema,) = [r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'ws\\_%'")]
        status = conn.execute(f'SELECT status FROM "{schema}".pipeline_runs').fetchall()
    assert status == [("completed",)]


def test_a_password_in_the_query_is_never_shown_nor_recorded(
    tmp_path: Path, pg_cluster: PostgresCluster, pg_url: str
) -> None:
    # Unreachable: the refusal names the database, never the query's secrets.
    nowhere = tmp_path / "no-server-here"
    url = f"postgresql://app@/hangar?host={nowhere}&password={SECRET}&sslpassword={SECRET}"
    line = one_line_refusal(serve(tmp_path / "d", "--database-url", url))
    assert line.startswith("the server cannot start: cannot connect to the PostgreSQL database ")
    assert "password=" not in line
    # Opened: the record keeps the database, not the password, and a command given no URL opens it.
    dbname = str(make_url(pg_url).database)
    role, password = pg_cluster.login_role(dbname)
    given = make_url(pg_url).set(username=role).update_query_dict({"password": password})
    data = tmp_path / "q"
    done = hangar(
        "admin", "setting", "rigs.memoryBudgetMb", "2048", "--data-dir", str(data),
        "--database-url", given.render_as_string(hide_password=False),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    recorded = (data / URL_FILE).read_text()
    assert password not in recorded and "password" not in recorded
    again = hangar("admin", "setting", "rigs.memoryBudgetMb", "--data-dir", str(data), env={"PGPASSWORD": password})
    assert (again.returncode, again.stdout.strip()) == (0, "2048"), again.stderr


def test_another_database_than_the_recorded_one_is_refused_unless_the_data_directory_is_moved(
    tmp_path: Path, pg_cluster: PostgresCluster, pg_url: str
) -> None:
    data = tmp_path / "d"
    first = hangar("admin", "setting", "rigs.memoryBudgetMb", "4096", "--data-dir", str(data), "--database-url", pg_url)
    assert first.returncode == 0, first.stderr
    recorded = (data / URL_FILE).read_text()
    with pg_cluster.database() as other_name:
        other = pg_cluster.url(other_name)
        # A stale variable in an operator's shell names another database: refused, naming both, nothing touched.
        stale = {"HANGAR_DATABASE_URL": make_url(other).set(password=SECRET).render_as_string(hide_password=False)}
        line = one_line_refusal(hangar("admin", "setting", "rigs.memoryBudgetMb", "--data-dir", str(data), env=stale))
        assert f"/{make_url(pg_url).database}?" in line and f"/{other_name}?" in line
        assert "hangar admin set-database-url" in line
        assert (data / URL_FILE).read_text() == recorded
        with psycopg.connect(pg_cluster.dsn(other_name)) as conn:
            found = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s", (SERVER_SCHEMA,)).fetchone()
        assert found == (0,)  # the other database was not migrated
        # The recorded database given again (with a password in its query) is accepted.
        same = make_url(pg_url).update_query_dict({"password": "unused"}).render_as_string(hide_password=False)
        again = hangar("admin", "setting", "rigs.memoryBudgetMb", "--data-dir", str(data), "--database-url", same)
        assert (again.returncode, again.stdout.strip()) == (0, "4096"), again.stderr
        # The explicit way moves the record.
        moved = hangar("admin", "set-database-url", "--data-dir", str(data), "--database-url", other)
        assert moved.returncode == 0, moved.stderr
        assert make_url((data / URL_FILE).read_text().strip()).database == other_name
        now = hangar("admin", "setting", "rigs.memoryBudgetMb", "--data-dir", str(data))
        assert now.returncode == 0 and now.stdout.strip() != "4096", (now.stdout, now.stderr)
