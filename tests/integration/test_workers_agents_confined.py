"""A command agent's step a ``hangar worker`` takes runs confined on the worker's host, as in the server: in an
enclosure of the run's own, as the rig user, seeing neither the worker's data directory nor its environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hangar.core.guestacl import RIG_UID
from tests.integration.rigs_enclosure_env import PACKS, ready_pack
from tests.integration.test_servers_on_one_postgresql import finished
from tests.integration.test_workers import hangar_worker, mint, workers_attached
from tests.integration.test_workers_agents import OPEN, ask, command_agent, start
from tests.support.processes import cli, hangar_serve, owner_token
from tests.support.rpc import RpcClient
from tests.unit.agents.support import template

pytestmark = pytest.mark.slow

SECRET = "worker-env-secret-5813"


async def test_a_workers_command_agent_runs_in_an_enclosure_on_its_host(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await ready_pack()
    monkeypatch.setenv("HANGAR_RIG_PACKS_DIR", str(PACKS))
    monkeypatch.setenv("WORKER_SECRET", SECRET)  # the worker's environment, which the command must not see
    worker_data = tmp_path / "w1"
    probe = (
        "cat > /dev/null; "
        'echo "uid=$(id -u)"; '
        f'if [ -e "{worker_data}" ]; then echo data=visible; else echo data=hidden; fi; '
        f"env | grep -c {SECRET} || true; "
        'echo "key=$HANGAR_ATTEMPT_KEY"'
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
            agent = await command_agent(c, ws, "Probe", probe)
            run_id = await start(c, ws, template(OPEN, ask("cmd", agent, "probe"), tid="probe"))
            run = await finished(c, ws, run_id, timeout=300)
    assert run["status"] == "completed", (run, (tmp_path / "w1.log").read_text()[-3000:])
    assert run["state"]["cmd"].splitlines() == [
        f"uid={RIG_UID}",
        "data=hidden",
        "0",
        f"key=pipeline:{run_id}/cmd#1.1",
    ]
    assert os.environ.get("WORKER_SECRET") == SECRET
