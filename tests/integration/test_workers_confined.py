"""A shell step a ``hangar worker`` takes runs confined on the worker's host, as in the server: in the run's
enclosure, as the rig user, seeing neither the worker's data directory nor its environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hangar.core.guestacl import RIG_UID
from tests.integration.rigs_enclosure_env import PACKS, ready_pack
from tests.integration.test_servers_on_one_postgresql import finished
from tests.integration.test_workers import fan_out, hangar_worker, mint, start, workers_attached
from tests.support.processes import cli, hangar_serve, owner_token
from tests.support.rpc import RpcClient

pytestmark = pytest.mark.slow

SECRET = "worker-env-secret-4712"


async def test_a_workers_shell_step_runs_in_an_enclosure_on_its_host(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await ready_pack()
    monkeypatch.setenv("HANGAR_RIG_PACKS_DIR", str(PACKS))
    monkeypatch.setenv("WORKER_SECRET", SECRET)  # the worker's environment, which the script must not see
    worker_data = tmp_path / "w1"
    probe = (
        'echo "uid=$(id -u)"; '
        f'if [ -e "{worker_data}" ]; then echo data=visible; else echo data=hidden; fi; '
        f"env | grep -c {SECRET} || true"
    )
    data = tmp_path / "server"
    cli(data, "admin", "owner-token", "--database-url", pg_url)
    token = owner_token(data)
    mint(data, pg_url, "pool", tmp_path / "cred")
    with (
        hangar_serve(data, log=tmp_path / "server.log") as s,
        hangar_worker(worker_data, pg_url, tmp_path / "cred", tmp_path / "w1.log"),
    ):
        workers_attached(pg_url, 1)
        async with RpcClient(s.ws_url, token) as c:
            ws = (await c.call("workspaces.create", name="confined"))["id"]
            run = await finished(c, ws, await start(c, ws, fan_out("probe", 1, probe)), timeout=300)
    assert run["status"] == "completed", (run, (tmp_path / "w1.log").read_text()[-3000:])
    assert run["state"]["s0"].splitlines() == [f"uid={RIG_UID}", "data=hidden", "0"]
    assert run["state"]["s0_runDir"].startswith(str(worker_data))
    assert os.environ.get("WORKER_SECRET") == SECRET
