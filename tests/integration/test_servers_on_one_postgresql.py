"""Several ``hangar serve`` processes on one PostgreSQL database, each with its own data directory (as on
separate hosts, which share no filesystem): who drives a pipeline run, stop requests, take-over after kill -9,
pairing codes and authority, all through the database.

Real processes throughout: two servers on the suite's throwaway PostgreSQL cluster, real RPC clients, kill -9.
Shell steps run on the host (trusted host execution, a server setting both servers read from the database): the
test is about coordination, not confinement.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from hangar.core.leases import APPLICATION_NAME as LEASES_APPLICATION
from hangar.core.postgresql import workspace_schema
from tests.integration.test_agents_interrupt_elsewhere import alive
from tests.integration.test_confined_user_code import template
from tests.support.confined import CLI_AGENT
from tests.support.processes import ServeProcess, cli, hangar_serve, owner_token
from tests.support.records import share_secret_key
from tests.support.rpc import RpcClient, RpcError
from tests.support.runs import assert_completed, finished

pytestmark = pytest.mark.slow


@contextmanager
def two_servers(tmp_path: Path, pg_url: str) -> Iterator[tuple[ServeProcess, ServeProcess, str]]:
    """Servers A and B on one database, each on a data directory of its own; and the owner's credential."""
    data_a, data_b = tmp_path / "a", tmp_path / "b"
    for data in (data_a, data_b):  # each records the database in its data directory
        cli(data, "admin", "trusted-host-exec", "on", "--database-url", pg_url)
    share_secret_key(data_a, data_b)  # one installation key, copied to each host
    token = owner_token(data_a)
    with ExitStack() as stack:
        a = stack.enter_context(hangar_serve(data_a, log=tmp_path / "a.log"))
        b = stack.enter_context(hangar_serve(data_b, log=tmp_path / "b.log"))
        yield a, b, token


def stop_rows(pg_url: str, ws: str) -> list[tuple[object, ...]]:
    conninfo = make_url(pg_url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo) as conn:
        return conn.execute(f'SELECT kind, run_id FROM "{workspace_schema(ws)}".run_stop_requests').fetchall()


def shell_template(tid: str, script: str) -> dict[str, Any]:
    return template(tid, ("work", script, {}))


async def start_run(c: RpcClient, ws: str, template: dict[str, Any]) -> str:
    await c.call("pipelines.templates.create", workspace_id=ws, template=template)
    run_id = (await c.call("pipelines.runs.start", workspace_id=ws, templateId=template["id"]))["runId"]
    async with asyncio.timeout(60):  # until its driver runs the script
        while True:
            run = await c.call("pipelines.runs.get", workspace_id=ws, runId=run_id)
            if any(s["stepId"] == "work" and s["status"] == "running" for s in run["steps"]):
                return str(run_id)
            await asyncio.sleep(0.1)


async def test_a_run_whose_server_is_killed_is_taken_over_by_the_other_and_finished_once(
    tmp_path: Path, pg_url: str
) -> None:
    ran = tmp_path / "ran"  # one line per start of the script, on whichever server
    with two_servers(tmp_path, pg_url) as (a, b, token):
        async with RpcClient(a.ws_url, token) as ca:
            ws = (await ca.call("workspaces.create", name="takeover"))["id"]
            run_id = await start_run(
                ca, ws, shell_template("slow", f"echo start >> {ran}; sleep 4; echo end >> {ran}; echo done")
            )
        # A is killed mid-script: once its attempt has started (on a loaded machine that can take seconds).
        async with asyncio.timeout(60):
            while not ran.exists():
                await asyncio.sleep(0.05)
        a.kill9()
        async with RpcClient(b.ws_url, token) as cb:
            run = await finished(cb, ws, run_id)
            assert_completed(run)
            assert run["state"]["work"] == "done", run
            events = await cb.call("events.list", workspace_id=ws)
            ends = [e for e in events if e["type"] == "pipeline.runFinished" and e["payload"]["runId"] == run_id]
            assert len(ends) == 1, ends
        assert ran.read_text().splitlines() == ["start", "start", "end"]  # A's attempt died with A; B's ran to its end
        assert "taken over" in b.log_text()


async def test_a_stop_asked_of_one_server_stops_the_run_the_other_drives(tmp_path: Path, pg_url: str) -> None:
    late = tmp_path / "late"
    with two_servers(tmp_path, pg_url) as (a, b, token):
        async with RpcClient(a.ws_url, token) as ca, RpcClient(b.ws_url, token) as cb:
            ws = (await ca.call("workspaces.create", name="stop"))["id"]
            run_id = await start_run(ca, ws, shell_template("long", f"sleep 6; echo late > {late}; echo done"))
            await cb.call("pipelines.runs.cancel", workspace_id=ws, runId=run_id)
            run = await ca.call("pipelines.runs.get", workspace_id=ws, runId=run_id)
            assert run["status"] == "cancelled", run
            # A, which drove it, stopped its script: nothing the script would have done later happens.
            await asyncio.sleep(8)
            assert not late.exists()
            assert (await ca.call("pipelines.runs.get", workspace_id=ws, runId=run_id))["status"] == "cancelled"
        # The request was a row in the workspace's schema, gone with the run's end.
        assert stop_rows(pg_url, ws) == []


async def test_a_pairing_code_minted_on_one_server_is_redeemed_on_the_other_once(tmp_path: Path, pg_url: str) -> None:
    with two_servers(tmp_path, pg_url) as (a, b, token):
        async with RpcClient(a.ws_url, token) as ca:
            code = (await ca.call("devices.pairingCode"))["code"]
        paired = httpx.post(f"{b.url}/auth/pair", json={"code": code, "deviceName": "laptop"})
        assert paired.status_code == 200, paired.text
        async with RpcClient(a.ws_url, paired.json()["token"]) as device:
            assert (await device.call("users.me"))["isServerOwner"] is True
        again = httpx.post(f"{a.url}/auth/pair", json={"code": code, "deviceName": "second"})
        assert again.status_code >= 400, again.text


async def test_a_member_removed_through_one_server_is_refused_at_once_on_the_other(tmp_path: Path, pg_url: str) -> None:
    with two_servers(tmp_path, pg_url) as (a, b, token):
        async with RpcClient(a.ws_url, token) as ca:
            ws = (await ca.call("workspaces.create", name="members"))["id"]
            invite = (await ca.call("members.invite", workspace_id=ws, role="member"))["code"]
            paired = httpx.post(f"{a.url}/auth/pair", json={"code": invite, "deviceName": "pat"}).json()
            async with RpcClient(b.ws_url, paired["token"]) as pat:
                await pat.call("spaces.list", workspace_id=ws)  # B serves the member (and would cache, if it did)
                await ca.call("members.remove", workspace_id=ws, user_id=paired["userId"])
                with pytest.raises(RpcError) as refused:
                    await pat.call("spaces.list", workspace_id=ws)
                assert refused.value.code in ("forbidden", "not_found"), refused.value


async def sleeping_agent_run(c: RpcClient) -> tuple[str, str, int]:
    """A command agent's run sleeping on the host of the server ``c`` speaks to: (workspace, run, its child's
    pid)."""
    ws = (await c.call("workspaces.create", name="agents"))["id"]
    space = await c.call("spaces.create", workspace_id=ws, title="cli")
    adapter = {"type": "command", "argv": [*CLI_AGENT]}
    agent = await c.call("agents.create", workspace_id=ws, name="Sleeper", adapter=adapter)
    started = await c.call("agents.run", workspace_id=ws, agent_id=agent["id"], space_id=space["id"], prompt="sleep")
    pid_file = Path(space["folder"]) / "child.pid"
    async with asyncio.timeout(60):
        while not (pid_file.exists() and pid_file.read_text()):
            await asyncio.sleep(0.05)
    return ws, str(started["runId"]), int(pid_file.read_text())


async def test_an_interrupt_asked_of_one_server_stops_the_agent_run_the_other_drives(
    tmp_path: Path, pg_url: str
) -> None:
    with two_servers(tmp_path, pg_url) as (a, b, token):
        async with RpcClient(a.ws_url, token) as ca, RpcClient(b.ws_url, token) as cb:
            ws, run_id, child = await sleeping_agent_run(ca)
            run = await cb.call("runs.interrupt", workspace_id=ws, runId=run_id)
            assert run["outcome"] == "interrupted", run
            async with asyncio.timeout(10):  # A stopped the command it started
                while alive(child):
                    await asyncio.sleep(0.05)
            assert (await ca.call("runs.get", workspace_id=ws, runId=run_id))["outcome"] == "interrupted"


async def test_an_agent_run_whose_server_is_killed_is_closed_by_the_other_unasked(tmp_path: Path, pg_url: str) -> None:
    with two_servers(tmp_path, pg_url) as (a, b, token):
        async with RpcClient(a.ws_url, token) as ca:
            ws, run_id, child = await sleeping_agent_run(ca)
        a.kill9()
        async with RpcClient(b.ws_url, token) as cb:
            async with asyncio.timeout(60):
                while (run := await cb.call("runs.get", workspace_id=ws, runId=run_id))["status"] == "running":
                    await asyncio.sleep(0.2)
            assert run["outcome"] == "failed", run
        if alive(child):  # not in A's process group: a host's death would have taken it, a process's does not
            os.kill(child, signal.SIGKILL)


def terminate_lease_connections(pg_url: str) -> list[int]:
    """End every server's lease connection (what a database restart or a failover does to it): their pids."""
    conninfo = make_url(pg_url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (LEASES_APPLICATION,),
        ).fetchall()
    return [int(str(pid)) for pid, _ in rows]


async def test_an_agent_run_lives_through_a_blip_of_its_lease_connection(tmp_path: Path, pg_url: str) -> None:
    """The database drops the lease connection of the server driving a run (the other server is looking for
    abandoned runs all along): the driver takes its lease back on a new connection and the run goes on; it is
    neither interrupted by its own server nor closed by the other."""
    with two_servers(tmp_path, pg_url) as (a, b, token):
        async with RpcClient(a.ws_url, token) as ca:
            ws, run_id, child = await sleeping_agent_run(ca)
            ended = terminate_lease_connections(pg_url)
            assert ended
            async with asyncio.timeout(60):  # A noticed, and took its lease back
                while "every run driven here goes on" not in a.log_text():
                    run = await ca.call("runs.get", workspace_id=ws, runId=run_id)
                    assert run["status"] == "running", run
                    await asyncio.sleep(0.1)
            await asyncio.sleep(3)  # several of A's heartbeats and B's looks for abandoned runs
            async with RpcClient(b.ws_url, token) as cb:
                run = await cb.call("runs.get", workspace_id=ws, runId=run_id)
            assert run["status"] == "running", run
            assert alive(child)
            assert "stopped driving" not in a.log_text()
            run = await ca.call("runs.interrupt", workspace_id=ws, runId=run_id)
            assert run["outcome"] == "interrupted", run
