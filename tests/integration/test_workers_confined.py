"""What a ``hangar worker`` runs of a step runs confined on the worker's host, as in the server: a shell step in
the run's enclosure, a command agent's program in an enclosure of its run's own; as the rig user, seeing neither
the worker's data directory nor its environment."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hangar.core.guestacl import RIG_UID
from tests.integration.rigs_enclosure_env import PACKS, ready_pack
from tests.integration.test_servers_on_one_postgresql import finished
from tests.integration.test_workers import fan_out, hangar_worker, mint, start, workers_attached
from tests.integration.test_workers_agents import OPEN, ask, command_agent
from tests.support.processes import cli, hangar_serve, owner_token
from tests.support.rpc import RpcClient
from tests.unit.agents.support import template

pytestmark = pytest.mark.slow

SECRET = "worker-env-secret-4712"


def probe(worker_data: Path) -> str:
    """Who the program runs as, whether it sees the worker's data directory, and whether its environment."""
    return (
        'echo "uid=$(id -u)"; '
        f'if [ -e "{worker_data}" ]; then echo data=visible; else echo data=hidden; fi; '
        f"env | grep -c {SECRET} || true"
    )


@contextlib.asynccontextmanager
async def confined_worker(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[RpcClient, str, Path]]:
    """A server and one worker (whose environment holds ``SECRET``), enclosures on: a client, a workspace and the
    worker's data directory."""
    await ready_pack()
    monkeypatch.setenv("HANGAR_RIG_PACKS_DIR", str(PACKS))
    monkeypatch.setenv("WORKER_SECRET", SECRET)  # the worker's environment, which the program must not see
    worker_data = tmp_path / "w1"
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
            yield c, (await c.call("workspaces.create", name="confined"))["id"], worker_data
    assert os.environ.get("WORKER_SECRET") == SECRET


async def test_a_workers_shell_step_runs_in_an_enclosure_on_its_host(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with confined_worker(tmp_path, pg_url, monkeypatch) as (c, ws, worker_data):
        run = await finished(c, ws, await start(c, ws, fan_out("probe", 1, probe(worker_data))), timeout=300)
    assert run["status"] == "completed", (run, (tmp_path / "w1.log").read_text()[-3000:])
    assert run["state"]["s0"].splitlines() == [f"uid={RIG_UID}", "data=hidden", "0"]
    assert run["state"]["s0_runDir"].startswith(str(worker_data))


async def test_a_workers_command_agent_runs_in_an_enclosure_on_its_host(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with confined_worker(tmp_path, pg_url, monkeypatch) as (c, ws, worker_data):
        script = f'cat > /dev/null; {probe(worker_data)}; echo "key=$HANGAR_ATTEMPT_KEY"'
        agent = await command_agent(c, ws, "Probe", script)
        run_id = await start(c, ws, template(OPEN, ask("cmd", agent, "probe"), tid="probe"))
        run = await finished(c, ws, run_id, timeout=300)
    assert run["status"] == "completed", (run, (tmp_path / "w1.log").read_text()[-3000:])
    lines = [f"uid={RIG_UID}", "data=hidden", "0", f"key=pipeline:{run_id}/cmd#1.1"]
    assert run["state"]["cmd"].splitlines() == lines
