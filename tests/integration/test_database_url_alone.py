"""``--database-url`` as an alternative to ``--data-dir`` for ``hangar admin …`` and ``hangar pipeline …``
(CONTRACTS.md section 11), through the real command line on the suite's throwaway PostgreSQL cluster: given a URL
alone (the flag or the variable), a command acts on that database and reads, locks or writes no local data
directory (the default one included); a command that needs a data directory's files refuses in one sentence
naming what needs them, exit 1; given both, the data directory is used as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import cli, hangar_serve
from tests.support.rpc import RpcClient
from tests.support.templates import HOP, written

pytestmark = pytest.mark.slow

HANGAR = str(Path(sys.executable).parent / "hangar")


def hangar(home: Path, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``hangar argv`` with no data directory named anywhere: the default one lives under ``home``."""
    base = {k: v for k, v in os.environ.items() if k not in ("HANGAR_DATABASE_URL", "HANGAR_DATA_DIR")}
    base["XDG_DATA_HOME"] = str(home)
    return subprocess.run(
        [HANGAR, *argv], env={**base, **(env or {})}, capture_output=True, text=True, timeout=180, check=False
    )


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    return done.stdout


def refused(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "--data-dir" in lines[0], lines[0]
    return lines[0]


async def test_admin_commands_act_on_the_database_alone_and_touch_no_local_data_directory(
    tmp_path: Path, pg_url: str
) -> None:
    home = tmp_path / "home"
    default = home / "hangar"  # where the default data directory would be
    token = ok(hangar(home, "admin", "owner-token", "--database-url", pg_url)).strip()
    assert token.startswith("hgr_")
    ok(hangar(home, "admin", "trusted-host-exec", "on", env={"HANGAR_DATABASE_URL": pg_url}))  # the variable
    shown = ok(hangar(home, "admin", "setting", "--database-url", pg_url))
    assert "trustedHostExec" in shown or "true" in shown, shown
    ok(hangar(home, "admin", "local-repo-roots", "--database-url", pg_url))
    ok(hangar(home, "admin", "retention", "--database-url", pg_url))
    ok(hangar(home, "admin", "backups", "--database-url", pg_url))
    ok(hangar(home, "admin", "migrate", "--database-url", pg_url))
    link = ok(hangar(home, "admin", "sign-in-link", "--url", "http://127.0.0.1:9", "--database-url", pg_url))
    assert link.startswith("http://127.0.0.1:9/"), link
    assert not default.exists()  # nothing was read, locked or written there
    # What they did is in the database: a server on it takes the token and shows the setting.
    data = tmp_path / "data"
    with hangar_serve(data, "--database-url", pg_url) as server:
        async with RpcClient(server.ws_url, token) as c:
            assert (await c.call("users.me"))["isServerOwner"] is True
    assert "TRUSTED HOST EXECUTION IS ON" in server.log_text()
    # Both given: the data directory's own records, as before (it records the database).
    both = cli(data, "admin", "trusted-host-exec", "off", "--database-url", pg_url, "--data-dir", str(data))
    assert both.returncode == 0
    assert ok(hangar(home, "admin", "setting", "trustedHostExec", "--database-url", pg_url)).strip() in (
        "false",
        "(default)",
    )
    assert not default.exists()


async def test_pipeline_show_acts_on_the_database_alone(tmp_path: Path, pg_url: str) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    template = written(HOP, tmp_path)
    started = cli(data, "pipeline", "run", str(template), "--json", "--database-url", pg_url, "--data-dir", str(data))
    run_id = json.loads(started.stdout)["runId"]
    shown = json.loads(ok(hangar(home, "pipeline", "show", run_id, "--database-url", pg_url)))
    assert shown["runId"] == run_id and shown["status"] == "completed", shown
    assert not (home / "hangar").exists()


def test_commands_that_need_a_data_directory_say_so_given_a_url_alone(tmp_path: Path, pg_url: str) -> None:
    home = tmp_path / "home"
    template = written(HOP, tmp_path)
    for argv, what in [
        (["admin", "set-database-url"], "set-database-url points a data directory"),
        (["pipeline", "run", str(template)], "pipeline run runs steps"),
        (["pipeline", "emit", "review.approved"], "pipeline emit runs steps"),
        (["pipeline", "resume", "r1"], "pipeline resume runs steps"),
    ]:
        line = refused(hangar(home, *argv, "--database-url", pg_url))
        assert what in line, line
        line = refused(hangar(home, *argv, env={"HANGAR_DATABASE_URL": pg_url}))
        assert what in line, line
    assert not (home / "hangar").exists()
    # With a data directory as well, the same command runs (the other side of the line).
    data = tmp_path / "data"
    done = cli(data, "pipeline", "run", str(template), "--database-url", pg_url, "--data-dir", str(data), check=False)
    assert done.returncode == 0, done.stderr
