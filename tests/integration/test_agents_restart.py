"""What happens to agent runs when the server stops: a clean stop interrupts them; a run a dead process left
``running`` is closed as failed on the next start, and its waiters (pipelines) are told."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hangar.agents import AgentRunner
from hangar.core.ids import new_id
from hangar.core.procs import start_ticks
from hangar.identity import IdentityService
from tests.support.confined import CLI_AGENT, trust_host
from tests.support.locks import LEASE_LAPSE, lease_elsewhere, let_go
from tests.support.rpc import RpcClient
from tests.support.server import running_server
from tests.unit.agents.support import collect_until, insert_running_run, server_parts, wait_run

SCRIPT = str(Path(__file__).parent.parent / "unit" / "agents" / "scripts" / "cli_agent.py")


@pytest.mark.sqlite_only(LEASE_LAPSE)
async def test_stop_interrupts_and_restart_closes_stale_runs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with running_server(data, parts=server_parts()) as srv:
        await trust_host(srv.ctx)  # the agent's pid is watched on the host
        ws = await srv.new_workspace("restart")
        async with RpcClient(srv.ws_url, srv.owner_token) as client:
            space = (await client.call("spaces.create", workspace_id=ws, title="s"))["id"]
            adapter = {"type": "command", "argv": [*CLI_AGENT]}
            agent = (await client.call("agents.create", workspace_id=ws, name="Cli", adapter=adapter))["id"]
            watch = await client.watch("spaces.watch", workspace_id=ws, space_id=space)
            live = await client.call("agents.run", workspace_id=ws, agent_id=agent, space_id=space, prompt="sleep")
            await collect_until(watch, "agents.textDelta")
            # A run a killed process left behind (recorded as running, its owner gone), and one that another
            # live process (a command beside the server) drives.
            stale, elsewhere = new_id(), new_id()
            other = subprocess.Popen(["sleep", "60"])
            for run_id, owner in ((stale, "999999999:1"), (elsewhere, f"{other.pid}:{start_ticks(other.pid)}")):
                await insert_running_run(srv, ws, run_id, agent, space, owner)
            # On PostgreSQL the driver's lease alone says who drives (a recorded pid may be of another host).
            held = await lease_elsewhere(
                srv.ctx.dbs.postgresql_url, srv.ctx.service(AgentRunner).control.kind, elsewhere
            )

    async with running_server(data, parts=server_parts()) as srv:
        token = await srv.ctx.service(IdentityService).issue_device(srv.owner_id, "again")
        async with RpcClient(srv.ws_url, token) as client:
            stopped = await wait_run(client, ws, live["runId"])
            assert stopped["outcome"] == "interrupted"
            assert stopped["error"] == "the run was stopped because the server is shutting down"
            closed = await wait_run(client, ws, stale)
            assert (closed["outcome"], closed["error"]) == ("failed", "the server stopped during the run")
            tasks = {
                e.payload["taskId"]: e.payload["outcome"]
                for e in await srv.ctx.bus.replay(ws)
                if e.type == "pipeline.taskFinished"
            }
            assert tasks == {live["runId"]: "interrupted", stale: "failed"}
            # The run another live process drives is left alone until that process is gone.
            assert (await client.call("runs.get", workspace_id=ws, runId=elsewhere))["status"] == "running"
            other.kill()
            other.wait()
            if held is not None:
                await let_go(held, srv.ctx.service(AgentRunner).control.kind, elsewhere)
            assert await srv.ctx.service(AgentRunner).recover(ws) == 1
            assert (await wait_run(client, ws, elsewhere))["outcome"] == "failed"
