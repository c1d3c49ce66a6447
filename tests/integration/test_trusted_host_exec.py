"""Trusted host execution, switched with the real CLI while a real server runs on a host without enclosures (its
rigs part has no tools): a shell step run on the host sees a minimal environment, never the server's (which here
holds a secret), and turning it off refuses user code again at once, naming the command that turns it on."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hangar.core.confine import HOST_ENV_KEPT
from hangar.rigs.backends.enclosure import EnclosureBackend
from hangar.rigs.part import make_rigs_part
from hangar.server.parts import all_parts
from tests.integration.rigs_enclosure_env import PACKS
from tests.integration.test_confined_user_code import run_template, step, template
from tests.support.rpc import RpcClient
from tests.support.runs import assert_completed
from tests.support.server import RunningServer, running_server

HANGAR = str(Path(sys.executable).parent / "hangar")
SECRET_NAME, SECRET = "HANGAR_TEST_SERVER_SECRET", "server-env-secret-8123"
# What a shell step is given (pipelines.bodies.shell) and what bash itself exports to what it starts.
STEP_ENV = {
    "HANGAR_PIPELINE_RUN_ID",
    "HANGAR_WORKSPACE_ID",
    "HANGAR_STEP_ID",
    "HANGAR_RUN_DIR",
    "HANGAR_ATTEMPT_KEY",
    "HANGAR_EARLIER_ATTEMPTS",
}
SHELL_ENV = {"PWD", "OLDPWD", "SHLVL", "_"}
# The names the script was given (bash's own list: a program started from it may add some of its own), and how many
# variables hold the server's secret.
SHOW_ENV = f"compgen -e; echo; echo \"rundir=$HANGAR_RUN_DIR\"; env | grep -cF -- '{SECRET}' || true"


@pytest.fixture
async def srv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[RunningServer]:
    monkeypatch.setenv(SECRET_NAME, SECRET)  # the server's own environment (it runs in this process)
    rigs = make_rigs_part(
        lambda app: EnclosureBackend(app.datadir.sub("rigs"), packs_root=PACKS, tool_path="/nonexistent")
    )
    async with running_server(tmp_path / "data", parts=[*(p for p in all_parts() if p.name != "rigs"), rigs]) as s:
        yield s


def trusted_host_exec(state: str, data_dir: Path) -> str:
    done = subprocess.run(
        [HANGAR, "admin", "trusted-host-exec", state, "--data-dir", str(data_dir)],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return done.stdout


async def test_code_run_on_the_host_gets_a_minimal_environment_not_the_servers(srv: RunningServer) -> None:
    assert "ON" in trusted_host_exec("on", srv.data_dir)
    ws = await srv.new_workspace("host")
    async with RpcClient(srv.ws_url, srv.owner_token) as c:
        run = await run_template(srv, c, ws, template("env", ("env", SHOW_ENV, {})))
    assert_completed(run)
    names, rest = run["state"]["env"].split("\n\n")
    seen = set(names.split())
    assert SECRET_NAME not in seen and rest.splitlines() == [f"rundir={srv.data_dir / 'pipelines' / run['runId']}", "0"]
    assert seen <= set(HOST_ENV_KEPT) | STEP_ENV | SHELL_ENV, sorted(seen - set(HOST_ENV_KEPT) - STEP_ENV)
    assert {"PATH", *STEP_ENV} <= seen


async def test_turning_trusted_host_execution_off_refuses_user_code_again(srv: RunningServer) -> None:
    ws = await srv.new_workspace("host")
    async with RpcClient(srv.ws_url, srv.owner_token) as c:
        assert "ON" in trusted_host_exec("on", srv.data_dir)
        ran = await run_template(srv, c, ws, template("on", ("on", "echo ran", {})))
        assert ran["status"] == "completed" and ran["state"]["on"] == "ran"
        assert "off" in trusted_host_exec("off", srv.data_dir)
        # Read at every use: the server (another process changed the setting) refuses the very next step.
        refused = await run_template(srv, c, ws, template("off", ("off", "echo ran", {})))
        assert refused["status"] == "failed"
        error = step(refused, "off")["error"]
        assert "user code runs confined in an enclosure" in error and "hangar admin trusted-host-exec on" in error
        assert "off" not in refused.get("state", {})
