"""Upgrades: data directories made by earlier released versions open in this one and are migrated in place.

The fixtures (tests/fixtures/upgrades/hangar-VERSION.tar.gz) were made by each release's own ``hangar``
(scripts/upgrade_fixtures/build.py, the releases in scripts/upgrade_fixtures/releases.toml); beside each, its
JSON names the release's commit, the records it made and the credentials to read them. Each is opened with this
checkout's ``hangar serve``: ``/readyz`` answers ready, the records are there through the RPC ops, and the old
owner's and member's credentials still work. A directory a newer Hangar migrated is refused naming both versions.
A migration killed (SIGKILL, by the ``HANGAR_TEST_KILL_AFTER_MIGRATION_STEP`` hook) after any one of its steps
leaves every database as it was or at its new head, and the next run finishes with the same records an unbroken
run leaves.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import subprocess
import tarfile
import tomllib
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic.script import ScriptDirectory

import hangar
from hangar.core.migrating import KILL_AFTER_STEP, RELEASE_TABLE, MigrationSet
from hangar.server.parts import all_parts
from tests.support.forked_hangar import ForkedHangar, Ran
from tests.support.processes import CHECKOUT, HANGAR, hangar_env, hangar_serve
from tests.support.rpc import RpcClient, RpcError

pytestmark = pytest.mark.sqlite_only("the fixtures are SQLite data directories made by earlier releases")

FIXTURES = CHECKOUT / "tests" / "fixtures" / "upgrades"
with open(CHECKOUT / "scripts" / "upgrade_fixtures" / "releases.toml", "rb") as _f:
    RELEASES: list[dict[str, str]] = tomllib.load(_f)["release"]
VERSIONS = [r["version"] for r in RELEASES]
SETS: dict[str, list[MigrationSet]] = {
    scope: [m for p in all_parts() for m in p.migrations if m.scope == scope] for scope in ("server", "workspace")
}


def described(version: str) -> dict[str, Any]:
    return dict(json.loads((FIXTURES / f"hangar-{version}.json").read_text()))


def unpack(version: str, into: Path) -> Path:
    data = into / f"data-{version}"
    data.mkdir(mode=0o700, parents=True)
    with tarfile.open(FIXTURES / f"hangar-{version}.tar.gz") as tar:
        tar.extractall(data, filter="data")
    return data


def databases(data: Path) -> dict[str, tuple[Path, str]]:
    """Each database of the data directory by its name in the directory, with its scope."""
    found = {"server.db": (data / "server.db", "server")}
    for db in sorted(data.glob("*/workspace.db")):
        found[str(db.relative_to(data))] = (db, "workspace")
    return found


def reading(db: Path) -> contextlib.closing[sqlite3.Connection]:
    return contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True))


def stamps(db: Path) -> dict[str, str]:
    with reading(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'alembic_version_%'")]
        return {
            t.removeprefix("alembic_version_"): conn.execute(f"SELECT version_num FROM {t}").fetchone()[0]
            for t in tables
        }


def recorded_release(db: Path) -> str | None:
    with reading(db) as conn:
        try:
            row = conn.execute(f"SELECT version FROM {RELEASE_TABLE}").fetchone()
        except sqlite3.OperationalError:
            return None
        return None if row is None else str(row[0])


def pending_steps(data: Path) -> int:
    """How many migration steps bring every database of ``data`` to this checkout's heads (counted from the
    stamps with Alembic's own revision map, not from what the migrating code reports)."""
    total = 0
    for db, scope in databases(data).values():
        at = stamps(db)
        for mset in SETS[scope]:
            script = ScriptDirectory(str(mset.location))
            total += len(list(script.iterate_revisions("head", at.get(mset.name) or "base")))
    return total


def dump(db: Path) -> dict[str, Any]:
    """Everything a database holds (its schema and every table's rows), but the time it was migrated at."""
    with reading(db) as conn:
        schema = sorted(conn.execute("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"))
        rows = {}
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
            listed = "version" if name == RELEASE_TABLE else "*"
            rows[name] = sorted(conn.execute(f'SELECT {listed} FROM "{name}"').fetchall(), key=repr)
    return {"schema": schema, "rows": rows}


def dumps(data: Path) -> dict[str, dict[str, Any]]:
    return {name: dump(db) for name, (db, _scope) in databases(data).items()}


def migrate_env(data: Path, kill_after: int | None = None) -> dict[str, str]:
    env = {k: v for k, v in hangar_env(data).items() if k != KILL_AFTER_STEP}
    if kill_after is not None:
        env[KILL_AFTER_STEP] = str(kill_after)
    return env


def migrate(data: Path, forked: ForkedHangar | None = None, kill_after: int | None = None) -> Ran:
    """``hangar admin migrate`` on ``data`` (a process forked by ``forked`` when given, else ``hangar`` run anew);
    killed by the test hook after step ``kill_after`` when given."""
    env = migrate_env(data, kill_after)
    if forked is not None:
        return forked.run(["admin", "migrate"], env)
    done = subprocess.run([HANGAR, "admin", "migrate"], env=env, capture_output=True, text=True, timeout=300)
    return Ran(done.returncode, done.stdout, done.stderr)


def test_every_release_has_its_fixture_made_from_its_commit() -> None:
    assert VERSIONS, "releases.toml lists no release"
    for release in RELEASES:
        about = described(release["version"])
        assert about["version"] == release["version"] and about["commit"] == release["commit"]
        assert (FIXTURES / f"hangar-{release['version']}.tar.gz").is_file()


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_release_data_directory_opens_with_its_records_and_credentials(version: str, tmp_path: Path) -> None:
    about = described(version)
    data = unpack(version, tmp_path)
    before = {name: stamps(db) for name, (db, _scope) in databases(data).items()}
    assert all(recorded_release(db) is None for db, _scope in databases(data).values())  # releases before this record
    with hangar_serve(data, "--no-prepare-pack") as srv:
        async with httpx.AsyncClient() as http:
            ready = await http.get(f"{srv.url}/readyz")
        assert ready.status_code == 200 and ready.json() == {"status": "ready"}, ready.text
        wid = about["workspace"]["id"]
        async with RpcClient(srv.ws_url, about["owner"]["token"]) as owner:
            me = await owner.call("users.me")
            assert me["id"] == about["owner"]["userId"] and me["isServerOwner"] is True
            listed = await owner.call("workspaces.list")
            assert [(w["id"], w["name"]) for w in listed] == [(wid, about["workspace"]["name"])]
            members = {m["userId"]: m["role"] for m in await owner.call("members.list", workspace_id=wid)}
            assert members == {about["owner"]["userId"]: "owner", about["member"]["userId"]: "member"}
            spaces = {s["title"]: s["id"] for s in (await owner.call("spaces.list", workspace_id=wid))["spaces"]}
            assert spaces == {title: space["id"] for title, space in about["spaces"].items()}
            for space in about["spaces"].values():
                got = (await owner.call("messages.list", workspace_id=wid, space_id=space["id"]))["messages"]
                assert [m["content"] for m in got] == space["messages"]
            template = await owner.call("pipelines.templates.get", workspace_id=wid, templateId="fixture-route")
            assert [s["id"] for s in template["template"]["steps"]] == ["start", "route"]
            run = await owner.call("pipelines.runs.get", workspace_id=wid, runId=about["pipeline"]["runId"])
            assert run["status"] == "completed" and run["templateId"] == about["pipeline"]["templateId"]
            if about["chat"] is not None:  # the release had a chat bridge: its credentials are still the workspace's
                status = await owner.call("chat.status", workspace_id=wid)
                assert status["provider"] == about["chat"]["provider"] and status["state"] != "disconnected"
            # The records keep working: a new message lands after the old ones.
            general = about["spaces"]["general"]["id"]
            await owner.call("messages.post", workspace_id=wid, space_id=general, content="after the upgrade")
        async with RpcClient(srv.ws_url, about["member"]["token"]) as member:
            assert (await member.call("users.me"))["id"] == about["member"]["userId"]
            got = (await member.call("messages.list", workspace_id=wid, space_id=general))["messages"]
            assert [m["content"] for m in got] == [*about["spaces"]["general"]["messages"], "after the upgrade"]
            with pytest.raises(RpcError) as refused:  # still a member, not an admin
                await member.call("members.invite", workspace_id=wid, role="member")
            assert refused.value.code == "forbidden"
    after = {name: stamps(db) for name, (db, _scope) in databases(data).items()}
    assert after != before
    for name, (db, scope) in databases(data).items():
        heads = {m.name: ScriptDirectory(str(m.location)).get_current_head() for m in SETS[scope]}
        assert after[name] == heads, name
        assert recorded_release(db) == hangar.__version__, name


@pytest.mark.parametrize("oldest", VERSIONS)
def test_a_migration_killed_after_any_step_is_finished_by_the_next_run(oldest: str, tmp_path: Path) -> None:
    """Each release's data directory, killed after each of its migration steps in turn (the oldest has the most:
    every later release's steps are among its own): every database is then exactly as it was or at its new head
    (never half way), and the next run finishes with what an unbroken run leaves."""
    original = unpack(oldest, tmp_path / "original")
    steps = pending_steps(original)
    assert steps >= len(databases(original))  # kills inside a database and between two
    as_released = dumps(original)
    unbroken = unpack(oldest, tmp_path / "unbroken")
    done = migrate(unbroken)
    assert done.returncode == 0, done.stderr
    migrated = dumps(unbroken)
    assert all(migrated[name] != as_released[name] for name in migrated)
    with ForkedHangar() as forked:
        for step in range(1, steps + 1):
            data = unpack(oldest, tmp_path / f"killed-{step}")
            killed = migrate(data, forked, kill_after=step)
            assert killed.returncode == -signal.SIGKILL, (step, killed.returncode, killed.stderr)
            assert f"{KILL_AFTER_STEP}: killed after migration step {step} (" in killed.stderr
            for name, state in dumps(data).items():
                assert state in (as_released[name], migrated[name]), f"{name} half migrated after step {step}"
            again = migrate(data, forked)
            assert again.returncode == 0, (step, again.stderr)
            assert dumps(data) == migrated, f"killed after step {step}"
        # One step past the last: nothing is killed, so the count above is every step there is.
        data = unpack(oldest, tmp_path / "past")
        past = migrate(data, forked, kill_after=steps + 1)
        assert past.returncode == 0, past.stderr
        assert dumps(data) == migrated


async def test_a_server_killed_while_it_migrates_starts_next_time_with_the_records(tmp_path: Path) -> None:
    version = VERSIONS[0]
    about = described(version)
    data = unpack(version, tmp_path)
    with (
        pytest.raises(RuntimeError, match="exited with -9"),
        hangar_serve(data, "--no-prepare-pack", env={KILL_AFTER_STEP: "1"}),
    ):
        pass
    with hangar_serve(data, "--no-prepare-pack") as srv:
        async with RpcClient(srv.ws_url, about["owner"]["token"]) as owner:
            space = about["spaces"]["general"]
            got = await owner.call("messages.list", workspace_id=about["workspace"]["id"], space_id=space["id"])
            assert [m["content"] for m in got["messages"]] == space["messages"]


def _as_if_a_newer_hangar_migrated(data: Path, version: str, identity_revision: str | None) -> None:
    """What a newer Hangar leaves in the server database: its version recorded and, when it changed the schema,
    a revision this one does not know."""
    with contextlib.closing(sqlite3.connect(data / "server.db")) as conn, conn:
        conn.execute(f"UPDATE {RELEASE_TABLE} SET version = ?", (version,))
        if identity_revision is not None:
            conn.execute("UPDATE alembic_version_identity SET version_num = ?", (identity_revision,))


def test_a_data_directory_a_newer_hangar_migrated_is_refused_naming_both_versions(tmp_path: Path) -> None:
    with ForkedHangar() as forked:
        _refused_naming_both_versions(tmp_path, forked)


def _refused_naming_both_versions(tmp_path: Path, forked: ForkedHangar) -> None:
    data = unpack(VERSIONS[-1], tmp_path)
    assert migrate(data, forked).returncode == 0
    identity = next(m for m in SETS["server"] if m.name == "identity")
    head = ScriptDirectory(str(identity.location)).get_current_head()
    before = dumps(data)
    _as_if_a_newer_hangar_migrated(data, "9.1.0", "i9999")
    changed = dumps(data)
    sentence = (
        f"server.db was migrated by Hangar 9.1.0: its identity schema is at revision i9999, which this Hangar "
        f"({hangar.__version__}) does not know (the newest it knows is {head}); run Hangar 9.1.0 or newer"
    )
    refused = migrate(data, forked)
    assert refused.returncode == 1 and refused.stderr.strip().splitlines() == [f"hangar: {sentence}"]
    with pytest.raises(RuntimeError) as serving, hangar_serve(data, "--no-prepare-pack"):
        pass
    assert f"the server cannot start: {sentence}" in str(serving.value)
    assert dumps(data) == changed  # nothing written
    # The other side: a newer Hangar that changed no schema leaves a directory this one opens, and its record.
    _as_if_a_newer_hangar_migrated(data, "9.1.0", str(head))
    assert migrate(data, forked).returncode == 0
    assert recorded_release(data / "server.db") == "9.1.0"
    assert dumps(data)["server.db"]["schema"] == before["server.db"]["schema"]


def test_migrate_says_what_it_did_and_refuses_a_folder_without_an_install_or_a_damaged_database(
    tmp_path: Path,
) -> None:
    with ForkedHangar() as forked:
        data = unpack(VERSIONS[-1], tmp_path)
        done = migrate(data, forked)
        assert done.returncode == 0 and done.stdout.strip() == (
            f"migrated the server database and 1 workspace database(s) to Hangar {hangar.__version__}"
        )
        again = migrate(data, forked)  # nothing left to do: the same answer, nothing written
        assert again.returncode == 0 and again.stdout == done.stdout
        # A mistyped path: refused, and no install is made there.
        for missing in (tmp_path / "absent", tmp_path / "empty"):
            if missing.name == "empty":
                missing.mkdir()
            refused = migrate(missing, forked)
            assert refused.returncode == 1 and refused.stdout == ""
            assert refused.stderr.strip().splitlines() == [
                f"hangar: {missing} holds no Hangar data directory (no server.db, no database-url): nothing to migrate"
            ]
            assert not missing.exists() or list(missing.iterdir()) == []
        # A workspace database that lost a table: one sentence naming the workspace and the table, exit 1.
        (workspace_db,) = data.glob("*/workspace.db")
        with contextlib.closing(sqlite3.connect(workspace_db)) as conn, conn:
            conn.execute("DROP TABLE tickets")
        refused = migrate(data, forked)
        assert refused.returncode == 1 and refused.stdout == ""
        line = refused.stderr.strip().splitlines()[-1]  # after the log line the databases write for a damaged one
        assert line.startswith(f"hangar: workspace {workspace_db.parent.name} is unavailable: ") and "tickets" in line
