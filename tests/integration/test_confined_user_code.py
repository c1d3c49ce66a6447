"""Shell steps and command agents run confined in enclosures, never as the server on the host.

Driven over the real socket of the real server: a member's script looks for the data directory, the server's
secrets, its environment and its uid, and finds none of them. Where the host cannot run enclosures the step is
refused with the missing tools named, until the owner turns on trusted host execution with the real CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hangar.core.confine import HOST, Confinement
from hangar.core.guestacl import RIG_UID
from hangar.identity import IdentityService
from hangar.rigs.backends.enclosure import EnclosureBackend
from hangar.rigs.part import make_rigs_part
from hangar.server.app import warn_about_host_execution
from hangar.server.parts import all_parts
from tests.integration.rigs_enclosure_env import PACKS, ready_pack
from tests.support.confined import CLI_AGENT, host_pids
from tests.support.rpc import RpcClient
from tests.support.runs import assert_completed, finished
from tests.support.server import RunningServer, running_server
from tests.unit.agents.support import wait_run

HANGAR = str(Path(sys.executable).parent / "hangar")
SERVER_SECRET = "server-env-secret-4711"

PROBE = """
echo "uid=$(id -u)"
echo "pwd=$(pwd)"
echo "rundir=$HANGAR_RUN_DIR"
if [ -e "{data}" ]; then echo "data=visible"; else echo "data=hidden"; fi
if cat "{data}/secrets.json" >/dev/null 2>&1; then echo "secrets=read"; else echo "secrets=unreadable"; fi
if command -v hangar >/dev/null; then echo "hangar=present"; else echo "hangar=absent"; fi
env | grep -c {secret} || true
echo note > from-step.txt
echo warm > /tmp/warm-marker
"""


def template(tid: str, *bodies: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{"id": "start", "kind": "trigger"}]
    previous = "start"
    for sid, script, extra in bodies:
        config = {"script": script, "outputKey": sid, **extra.pop("config", {})}
        steps.append(
            {
                "id": sid,
                "kind": "listen",
                "body": "shell.run",
                "trigger": {"sourceStepIds": [previous]},
                "config": config,
                **extra,
            }
        )
        previous = sid
    return {"id": tid, "steps": steps}


def step(run: dict[str, Any], sid: str) -> dict[str, Any]:
    return dict(next(s for s in run["steps"] if s["stepId"] == sid))


async def run_template(srv: RunningServer, c: RpcClient, ws: str, raw: dict[str, Any]) -> dict[str, Any]:
    await c.call("pipelines.templates.create", workspace_id=ws, template=raw)
    started = await c.call("pipelines.runs.start", workspace_id=ws, templateId=raw["id"])
    return await finished(c, ws, started["runId"])


@contextlib.asynccontextmanager
async def member_session(tmp_path: Path, role: str = "member") -> AsyncIterator[tuple[RunningServer, RpcClient, str]]:
    """The real server (with rigs) and a plain member's client; the server's environment holds a secret."""
    await ready_pack()
    os.environ["HANGAR_TEST_SERVER_SECRET"] = SERVER_SECRET
    try:
        async with running_server(tmp_path / "data") as srv:
            ws = await srv.new_workspace("confined")
            token = await srv.new_user_token(ws, role, name="mallory")
            async with RpcClient(srv.ws_url, token) as c:
                yield srv, c, ws
    finally:
        os.environ.pop("HANGAR_TEST_SERVER_SECRET", None)


@pytest.mark.packs("terminal")
async def test_a_members_shell_steps_see_no_data_directory_no_server_env_and_share_one_warm_enclosure(
    tmp_path: Path,
) -> None:
    async with member_session(tmp_path) as (srv, c, ws):
        probe = PROBE.format(data=srv.data_dir, secret=SERVER_SECRET)
        second = "cat from-step.txt; cat /tmp/warm-marker; ls /proc | grep -c '^[0-9]'"
        run = await run_template(srv, c, ws, template("probe", ("probe", probe, {}), ("again", second, {})))
        assert_completed(run)
        seen = dict(line.split("=", 1) for line in run["state"]["probe"].splitlines() if "=" in line)
        assert seen["uid"] == str(RIG_UID)  # the rig user, whose uid no host account has
        assert seen["pwd"] == seen["rundir"] == "/home/rig/worktree"
        assert seen["data"] == "hidden" and seen["secrets"] == "unreadable" and seen["hangar"] == "absent"
        assert run["state"]["probe"].splitlines()[-1] == "0"  # no variable of the server's environment
        note, marker, processes = run["state"]["again"].splitlines()
        # the second step ran in the same enclosure (its /tmp), in the same mounted working directory
        assert (note, marker) == ("note", "warm")
        assert int(processes) < 20  # its own PID namespace, not the host's processes
        run_dir = srv.data_dir / "pipelines" / run["runId"]
        assert (run_dir / "from-step.txt").read_text() == "note\n"
        assert run["state"]["probe_runDir"] == str(run_dir)
        # the run finished: its enclosure is gone
        rigs_run = srv.data_dir / "rigs" / "run"
        for _ in range(50):
            if not rigs_run.exists() or not any(rigs_run.iterdir()):
                break
            await asyncio.sleep(0.1)
        assert not rigs_run.exists() or not any(rigs_run.iterdir())


@pytest.mark.packs("terminal")
async def test_a_confined_step_cannot_mint_an_owner_credential_or_steer_the_driver(tmp_path: Path) -> None:
    async with member_session(tmp_path) as (srv, c, ws):
        script = (
            f"hangar admin owner-token --data-dir {srv.data_dir} 2>&1; "
            f"python3 -c 'import os; print(os.path.exists(\"{srv.data_dir}/identity.db\"))'; "
            "mkdir -p .shell && echo 1:0 > .shell/probe; ls -a"
        )
        run = await run_template(srv, c, ws, template("mint", ("mint", script, {})))
        assert_completed(run)
        out = run["state"]["mint"]
        assert "not found" in out and "False" in out
        # the driver's lock and records live outside what the script can write
        assert not (srv.data_dir / "pipelines" / run["runId"] / "driver.lock").exists()
        devices = await srv.ctx.service(IdentityService).list_devices(srv.owner_id)
        assert [d.name for d in devices] == ["test-owner"]


@pytest.mark.packs("terminal")
async def test_a_shell_step_reaches_neither_the_servers_listener_nor_the_server_door(tmp_path: Path) -> None:
    async with member_session(tmp_path) as (srv, c, ws):
        port = srv.url.rsplit(":", 1)[1]
        urls = [f"http://127.0.0.1:{port}/mcp", f"http://198.18.0.1:{port}/mcp", "http://198.18.0.1:984/mcp"]
        script = "; ".join(f"curl -sS -m 5 -o /dev/null -w '%{{http_code}} ' {u}; echo rc=$?" for u in urls)
        run = await run_template(srv, c, ws, template("door", ("door", script, {})))
        codes = [line.split("rc=")[1] for line in run["state"]["door"].splitlines() if "rc=" in line]
        assert len(codes) == 3 and codes[0] == "7", codes  # the enclosure's loopback: nothing listens there
        assert set(codes[1:]) <= {"52", "56"}, codes  # the gate's deny listener hung up: no door for shell steps


@pytest.mark.packs("terminal")
async def test_a_step_timeout_kills_the_script_inside_the_enclosure(tmp_path: Path) -> None:
    async with member_session(tmp_path) as (srv, c, ws):
        raw = template("nap", ("nap", "sleep 97 & echo $! > nap.pid; wait", {"config": {"timeoutMs": 3000}}))
        await c.call("pipelines.templates.create", workspace_id=ws, template=raw)
        started = await c.call("pipelines.runs.start", workspace_id=ws, templateId="nap")
        pid_file = srv.data_dir / "pipelines" / started["runId"] / "nap.pid"
        for _ in range(300):
            if pid_file.exists() and pid_file.read_text().strip():
                break
            await asyncio.sleep(0.05)
        ns_pid = int(pid_file.read_text())
        assert host_pids(ns_pid, "sleep"), "the script's child should run before the timeout"
        run = await finished(c, ws, started["runId"])
        assert step(run, "nap")["status"] == "timedOut"
        for _ in range(100):
            if not host_pids(ns_pid, "sleep"):
                break
            await asyncio.sleep(0.05)
        assert not host_pids(ns_pid, "sleep"), "the script's child survived the timeout"


@pytest.mark.packs("terminal")
async def test_a_command_agent_runs_as_the_rig_user_in_its_spaces_enclosure(tmp_path: Path) -> None:
    async with member_session(tmp_path, "admin") as (_srv, c, ws):
        space = (await c.call("spaces.create", workspace_id=ws, title="cli"))["id"]
        adapter = {"type": "command", "argv": [*CLI_AGENT], "env": {"PLAIN": "p"}}
        agent = (await c.call("agents.create", workspace_id=ws, name="Cli", adapter=adapter))["id"]
        for prompt in ("echo hi", "env", "context please"):
            started = await c.call("agents.run", workspace_id=ws, agent_id=agent, space_id=space, prompt=prompt)
            run = await wait_run(c, ws, started["runId"])
            assert run["outcome"] == "ok", run
        msgs = (await c.call("messages.list", workspace_id=ws, space_id=space))["messages"]
        replies = [m["content"] for m in msgs if m["author"]["kind"] == "agent"]
        assert replies[0].startswith("cwd=/home/rig/worktree\n")
        assert replies[1] == "token=- plain=p"
        seen = json.loads(replies[2])
        assert seen["prompt"] == "context please" and seen["turns"][-1] == "me: token=- plain=p"


async def test_without_enclosures_user_code_is_refused_until_the_owner_trusts_the_host(tmp_path: Path) -> None:
    rigs = make_rigs_part(
        lambda app: EnclosureBackend(app.datadir.sub("rigs"), packs_root=PACKS, tool_path="/nonexistent")
    )
    parts = [*(p for p in all_parts() if p.name != "rigs"), rigs]
    async with running_server(tmp_path / "data", parts=parts) as srv:
        ws = await srv.new_workspace("refused")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            run = await run_template(srv, c, ws, template("nope", ("nope", "echo ran", {})))
            assert run["status"] == "failed"
            error = step(run, "nope")["error"]
            assert "bwrap (Debian package bubblewrap)" in error
            assert "hangar admin trusted-host-exec on" in error
            turned = subprocess.run(
                [HANGAR, "admin", "trusted-host-exec", "on", "--data-dir", str(srv.data_dir)],
                capture_output=True, text=True, check=True, timeout=60,
            )  # fmt: skip
            assert "ON" in turned.stdout
            started = await c.call("pipelines.runs.start", workspace_id=ws, templateId="nope")
            again = await finished(c, ws, started["runId"])
            assert again["status"] == "completed" and again["state"]["nope"] == "ran"


async def test_trusted_host_execution_is_said_loudly_at_start(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with running_server(tmp_path / "data") as srv:
        caplog.set_level(logging.WARNING, logger="hangar.server")
        await warn_about_host_execution(srv.ctx)
        assert "TRUSTED HOST EXECUTION" not in caplog.text
        subprocess.run(
            [HANGAR, "admin", "trusted-host-exec", "on", "--data-dir", str(srv.data_dir)], check=True, timeout=60
        )
        await warn_about_host_execution(srv.ctx)
        assert "TRUSTED HOST EXECUTION IS ON" in caplog.text
        assert isinstance(srv.ctx.service(Confinement), Confinement) and HOST.where == "host"
