"""Interrupting an agent run that another process drives: `hangar pipeline run` (a real process) drives a
command agent's run for its step, and the server's `runs.interrupt` on the same data directory stops it (the
agent's processes are gone, the step sees the outcome). The server's recovery never closes a run a live process
holds, and a run whose driver dies while an interrupt waits is closed as interrupted by the requester."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hangar.agents import AgentRunner
from hangar.core.ids import new_id
from hangar.core.runcontrol import LOCK_NAME
from hangar.workspace import SpaceService
from tests.support.confined import CLI_AGENT, trust_host
from tests.support.locks import LEASE_LAPSE, driver_held_elsewhere
from tests.support.records import stop_requested
from tests.support.rpc import RpcClient
from tests.support.server import RunningServer, running_server
from tests.unit.agents.support import ask_agent_template, insert_running_run, server_parts, wait_run

HANGAR = str(Path(sys.executable).parent / "hangar")
SCRIPT = str(Path(__file__).parent.parent / "unit" / "agents" / "scripts" / "cli_agent.py")


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@contextlib.asynccontextmanager
async def driven_elsewhere(
    tmp_path: Path, srv: RunningServer, c: RpcClient
) -> AsyncIterator[tuple[subprocess.Popen[str], str, dict[str, Any], int]]:
    """A `hangar pipeline run` process driving a sleeping command agent: (process, ws, run, agent's pid).
    The agent runs on the host (trusted host execution), so its pid is a host pid this test can watch."""
    await trust_host(srv.ctx)
    ws = (await c.call("workspaces.create", name="cli"))["id"]
    adapter = {"type": "command", "argv": [*CLI_AGENT]}
    agent = (await c.call("agents.create", workspace_id=ws, name="Sleeper", adapter=adapter))["id"]
    file = tmp_path / "ask.json"
    file.write_text(json.dumps(ask_agent_template("ask-sleeper", agent, "sleep")))
    proc = subprocess.Popen(
        [HANGAR, "pipeline", "run", str(file), "--data-dir", str(srv.data_dir), "--workspace", "cli", "--json"],
        env={k: v for k, v in os.environ.items() if k != "HANGAR_DATA_DIR"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    child = 0
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the agent run never started sleeping"
            runs = (await c.call("runs.list", workspace_id=ws))["runs"]
            if runs:
                pid_file = srv.ctx.service(SpaceService).folder(ws, runs[0]["spaceId"]) / "child.pid"
                if pid_file.exists() and pid_file.read_text():
                    child = int(pid_file.read_text())
                    break
            await asyncio.sleep(0.05)
        yield proc, ws, runs[0], child
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        if child:  # the agent script's group, which a killed driver could not stop
            with contextlib.suppress(ProcessLookupError):
                os.killpg(os.getpgid(child), signal.SIGKILL)


async def wait_gone(pid: int) -> None:
    deadline = time.monotonic() + 10
    while alive(pid):
        assert time.monotonic() < deadline, f"process {pid} is still running"
        await asyncio.sleep(0.02)


async def test_server_interrupts_a_run_a_command_drives(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path / "data", parts=server_parts()) as srv,
        RpcClient(srv.ws_url, srv.owner_token) as c,
    ):
        async with driven_elsewhere(tmp_path, srv, c) as (proc, ws, run, child):
            runner = srv.ctx.service(AgentRunner)
            # Recovery (what a starting process does) leaves the live command's run alone.
            assert await runner.recover(ws) == 0
            assert (await c.call("runs.get", workspace_id=ws, runId=run["id"]))["status"] == "running"
            started = time.monotonic()
            stopped = await c.call("runs.interrupt", workspace_id=ws, runId=run["id"])
            took = time.monotonic() - started
            assert (stopped["status"], stopped["outcome"]) == ("finished", "interrupted")
            assert stopped["error"] == "the run was interrupted"
            await wait_gone(child)
            out, err = proc.communicate(timeout=30)
            # The step waiting for the run sees it interrupted: the pipeline fails (exit 1, as the contract says).
            assert proc.returncode == 1, err
            shown = json.loads(out)
            assert shown["status"] == "failed"
            assert shown["steps"]["ask"]["status"] == "failed"
        # The driver cleaned up after itself: no lock or request is left for the finished run.
        assert not runner.run_dir(run["id"]).exists()
    print(f"cross-process agent interrupt over RPC: {took:.3f} s")


@pytest.mark.sqlite_only(LEASE_LAPSE)
async def test_interrupt_closes_the_run_when_its_driver_dies_meanwhile(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path / "data", parts=server_parts()) as srv,
        RpcClient(srv.ws_url, srv.owner_token) as c,
        driven_elsewhere(tmp_path, srv, c) as (proc, ws, run, child),
    ):
        proc.send_signal(signal.SIGSTOP)
        asking = asyncio.ensure_future(c.call("runs.interrupt", workspace_id=ws, runId=run["id"]))
        deadline = time.monotonic() + 20
        control = srv.ctx.service(AgentRunner).run_dir(run["id"])
        while not await asyncio.to_thread(stop_requested, srv.data_dir, control, run["id"]):
            assert not asking.done(), asking.result()
            assert time.monotonic() < deadline, "no stop request was written"
            await asyncio.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        stopped = await asking
        assert (stopped["status"], stopped["outcome"]) == ("finished", "interrupted")
        assert stopped["error"] == "the run was interrupted after the process driving it stopped"
        await wait_gone(child)  # the agent's command the dead driver left running was killed by the closer
        tasks = [e.payload for e in await srv.ctx.bus.replay(ws) if e.type == "pipeline.taskFinished"]
        assert [(t["taskId"], t["outcome"]) for t in tasks] == [(run["id"], "interrupted")]


@pytest.mark.sqlite_only(LEASE_LAPSE)
async def test_recover_leaves_a_run_whose_lock_a_live_process_holds(tmp_path: Path) -> None:
    """Even when the recorded owner looks dead (another pid namespace, say), a held driver lock wins."""
    async with (
        running_server(tmp_path / "data", parts=server_parts()) as srv,
        RpcClient(srv.ws_url, srv.owner_token) as c,
    ):
        ws = await srv.new_workspace("locks")
        space = (await c.call("spaces.create", workspace_id=ws, title="s"))["id"]
        adapter = {"type": "command", "argv": [*CLI_AGENT]}
        agent = (await c.call("agents.create", workspace_id=ws, name="Cli", adapter=adapter))["id"]
        runner = srv.ctx.service(AgentRunner)
        run_id = new_id()
        lock_dir = runner.run_dir(run_id)
        lock_dir.mkdir(parents=True)
        async with driver_held_elsewhere(srv.ctx.dbs, runner.control.kind, run_id, lock_dir / LOCK_NAME):
            await insert_running_run(srv, ws, run_id, agent, space, "999999999:1")
            assert await runner.recover(ws) == 0
            assert (await c.call("runs.get", workspace_id=ws, runId=run_id))["status"] == "running"
        assert await runner.recover(ws) == 1
        closed = await wait_run(c, ws, run_id)
        assert (closed["outcome"], closed["error"]) == ("failed", "the server stopped during the run")


async def test_cancelling_the_pipeline_interrupts_its_agent_run_in_the_other_process(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path / "data", parts=server_parts()) as srv,
        RpcClient(srv.ws_url, srv.owner_token) as c,
        driven_elsewhere(tmp_path, srv, c) as (proc, ws, run, child),
    ):
        # The step waiting on the agent run is suspended (nobody holds the pipeline run); the command drives
        # the agent run. Cancelling the pipeline over RPC also stops that agent run, in the command's process.
        pipeline_run = run["dispatchedBy"].removeprefix("pipeline:").split("/")[0]
        snap = await c.call("pipelines.runs.cancel", workspace_id=ws, runId=pipeline_run)
        assert snap["status"] == "cancelled"
        stopped = await wait_run(c, ws, run["id"])
        assert (stopped["outcome"], stopped["error"]) == ("interrupted", "the run was interrupted")
        await wait_gone(child)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 1, err
        assert json.loads(out)["status"] == "cancelled"
