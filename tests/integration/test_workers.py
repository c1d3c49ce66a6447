"""``hangar worker`` processes taking pipeline steps from the queue in PostgreSQL: two workers sharing a run, a
worker killed -9 mid-step and its step finished by another with the earlier try's key, worker credentials refused
when revoked and for everything but working, and a server without workers (or told to) running steps itself.

Real processes throughout: a ``hangar serve`` and ``hangar worker`` processes, each on a data directory of its own
(as on separate hosts), on the suite's throwaway PostgreSQL cluster; real RPC clients; kill -9. Shell steps run
on the host (trusted host execution, a server setting every process reads from the database): the tests are about
the queue, not confinement (``tests/integration/test_workers_confined.py`` runs one step in an enclosure).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from tests.integration.test_servers_on_one_postgresql import finished
from tests.support.processes import HANGAR, ServeProcess, cli, hangar_env, hangar_serve, owner_token, stop
from tests.support.rpc import RpcClient
from tests.support.runs import assert_completed

pytestmark = pytest.mark.slow


def sql(pg_url: str, query: str, *params: object) -> list[tuple[Any, ...]]:
    conninfo = make_url(pg_url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


def mint(data: Path, pg_url: str, name: str, to: Path) -> str:
    cli(data, "admin", "worker-credential", "create", "--name", name, "--to", str(to), "--database-url", pg_url)
    return to.read_text().strip().split("_")[1]  # hwk_<id>_<secret>


@contextlib.contextmanager
def hangar_worker(data: Path, pg_url: str, credential: Path, log: Path, *extra: str) -> Iterator[subprocess.Popen[str]]:
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [
                HANGAR,
                "worker",
                "--database-url",
                pg_url,
                "--credential-file",
                str(credential),
                "--data-dir",
                str(data),
                *extra,
            ],
            env=hangar_env(data),
            stdout=out,
            stderr=out,
            text=True,
            start_new_session=True,
        )
    try:
        yield proc
    finally:
        stop(proc)


def kill9(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)


def wait_for(check: Any, what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def group_alive(pgid: int) -> bool:
    """Whether a process of the group ``pgid`` still runs (a script's shell leads a group of its own)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def workers_attached(pg_url: str, n: int) -> None:
    wait_for(lambda: sql(pg_url, "SELECT count(*) FROM hangar_server.pipeline_workers")[0][0] >= n, f"{n} workers")


@contextlib.contextmanager
def server(tmp_path: Path, pg_url: str) -> Iterator[tuple[ServeProcess, str]]:
    data = tmp_path / "server"
    cli(data, "admin", "trusted-host-exec", "on", "--database-url", pg_url)
    token = owner_token(data)
    with hangar_serve(data, log=tmp_path / "server.log") as s:
        yield s, token


@contextlib.contextmanager
def server_and_worker(tmp_path: Path, pg_url: str) -> Iterator[tuple[ServeProcess, str, str, str]]:
    """A server, one worker attached to it with ``--server`` (credential ``pool``) and a second worker credential
    (``other``) no worker uses: the server, its owner's token and the two credentials' texts."""
    data = tmp_path / "server"
    with server(tmp_path, pg_url) as (s, token):
        mint(data, pg_url, "pool", tmp_path / "cred")
        mint(data, pg_url, "other", tmp_path / "other")
        cred, other = (tmp_path / "cred").read_text().strip(), (tmp_path / "other").read_text().strip()
        with hangar_worker(tmp_path / "w1", pg_url, tmp_path / "cred", tmp_path / "w1.log", "--server", s.url):
            workers_attached(pg_url, 1)
            yield s, token, cred, other


def fan_out(tid: str, n: int, script: str) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{"id": "start", "kind": "trigger"}]
    for i in range(n):
        steps.append(
            {
                "id": f"s{i}",
                "kind": "listen",
                "body": "shell.run",
                "trigger": {"sourceStepIds": ["start"]},
                "config": {"script": script, "outputKey": f"s{i}"},
            }
        )
    return {"id": tid, "steps": steps}


async def start(c: RpcClient, ws: str, template: dict[str, Any]) -> str:
    await c.call("pipelines.templates.create", workspace_id=ws, template=template)
    return str((await c.call("pipelines.runs.start", workspace_id=ws, templateId=template["id"]))["runId"])


async def test_a_run_whose_steps_are_done_by_two_workers(tmp_path: Path, pg_url: str) -> None:
    with server(tmp_path, pg_url) as (s, token):
        mint(tmp_path / "server", pg_url, "pool", tmp_path / "cred")
        with (
            hangar_worker(tmp_path / "w1", pg_url, tmp_path / "cred", tmp_path / "w1.log", "--concurrency", "2"),
            hangar_worker(tmp_path / "w2", pg_url, tmp_path / "cred", tmp_path / "w2.log", "--concurrency", "2"),
        ):
            workers_attached(pg_url, 2)
            async with RpcClient(s.ws_url, token) as c:
                ws = (await c.call("workspaces.create", name="pool"))["id"]
                run_id = await start(c, ws, fan_out("fan", 8, "sleep 1; echo $HANGAR_ATTEMPT_KEY"))
                run = await finished(c, ws, run_id)
        assert_completed(run)
        state = run["state"]
        # Each step ran on a worker's host: its working directory is under that worker's data directory.
        where = {state[f"s{i}_runDir"].split("/")[-3] for i in range(8)}
        assert where == {"w1", "w2"}, state
        assert state["s0"] == f"pipeline:{run_id}/s0#1.1"
        rows = sql(pg_url, "SELECT status, tries, worker_id FROM hangar_server.pipeline_step_queue")
        assert len(rows) == 8 and {r[:2] for r in rows} == {("done", 1)}, rows
        assert len({r[2] for r in rows}) == 2, rows
    assert not (tmp_path / "server" / "pipelines" / run_id).exists()  # the server ran none


async def test_a_worker_killed_mid_step_leaves_it_to_another_which_sees_the_earlier_try(
    tmp_path: Path, pg_url: str
) -> None:
    ran = tmp_path / "ran"
    # The end is written by the script's shell: one killed with its worker (it dies with the process that started
    # it) never writes it, so the step runs to completion once.
    script = (
        f'echo "$HANGAR_ATTEMPT_KEY earlier=$HANGAR_EARLIER_ATTEMPTS" >> {ran}; sleep 3; echo end >> {ran}; echo done'
    )
    with server(tmp_path, pg_url) as (s, token):
        mint(tmp_path / "server", pg_url, "pool", tmp_path / "cred")
        async with RpcClient(s.ws_url, token) as c:
            ws = (await c.call("workspaces.create", name="killed"))["id"]
            with hangar_worker(tmp_path / "w1", pg_url, tmp_path / "cred", tmp_path / "w1.log") as w1:
                workers_attached(pg_url, 1)
                run_id = await start(c, ws, fan_out("one", 1, script))
                wait_for(ran.exists, "the first worker to start the script")
                kill9(w1)
            assert ran.read_text().splitlines() == [f"pipeline:{run_id}/s0#1.1 earlier="]
            with hangar_worker(tmp_path / "w2", pg_url, tmp_path / "cred", tmp_path / "w2.log"):
                run = await finished(c, ws, run_id)
        assert_completed(run)
        assert run["state"]["s0"] == "done"
        assert run["state"]["s0_runDir"].split("/")[-3] == "w2"
    first, second = f"pipeline:{run_id}/s0#1.1", f"pipeline:{run_id}/s0#1.2"
    assert ran.read_text().splitlines() == [f"{first} earlier=", f"{second} earlier={first}", "end"]
    [(status, tries, history)] = sql(pg_url, "SELECT status, tries, history FROM hangar_server.pipeline_step_queue")
    assert (status, tries) == ("done", 2)
    assert [(t["key"], t["outcome"]) for t in history] == [(first, "lapsed"), (second, "ok")]
    assert history[0]["workerId"] != history[1]["workerId"]


async def test_a_revoked_credential_takes_nothing_more_and_its_running_step_is_fenced(
    tmp_path: Path, pg_url: str
) -> None:
    started = tmp_path / "started"
    # The first try sleeps long past its fencing (its shell leads its own process group); the next one does not.
    script = f"if [ -e {started} ]; then echo done; exit; fi; echo $$ > {started}; sleep 60; echo done"
    with server(tmp_path, pg_url) as (s, token):
        data = tmp_path / "server"
        revoked_id = mint(data, pg_url, "to revoke", tmp_path / "cred")
        mint(data, pg_url, "fresh", tmp_path / "fresh")
        async with RpcClient(s.ws_url, token) as c:
            ws = (await c.call("workspaces.create", name="revoked"))["id"]
            with hangar_worker(tmp_path / "w1", pg_url, tmp_path / "cred", tmp_path / "w1.log") as w1:
                workers_attached(pg_url, 1)
                run_id = await start(c, ws, fan_out("long", 1, script))
                # Waited on in threads: the socket's keepalive needs this event loop free (under load these
                # waits are longer than the server's ping timeout).
                await asyncio.to_thread(wait_for, started.exists, "the worker to start the script")
                revoke = ("admin", "worker-credential", "revoke", revoked_id, "--database-url", pg_url)
                revoked = await asyncio.to_thread(cli, data, *revoke)
                assert "is revoked" in revoked.stdout
                assert await asyncio.to_thread(w1.wait, 30) == 1  # it stops at its next heartbeat, saying why
            assert "was revoked" in (tmp_path / "w1.log").read_text()
            pgid = int(started.read_text())
            await asyncio.to_thread(wait_for, lambda: not group_alive(pgid), "the fenced script to be stopped", 20)
            # A worker given the revoked credential is refused at once, in one line.
            refused = await asyncio.to_thread(
                subprocess.run,
                [HANGAR, "worker", "--database-url", pg_url, "--credential-file", str(tmp_path / "cred")],
                env=hangar_env(tmp_path / "w3"),
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert refused.returncode == 1
            assert f"the worker credential 'to revoke' ({revoked_id}) was revoked" in refused.stderr
            # Another worker, with a live credential, takes the step after the lease lapses, and finishes it.
            with hangar_worker(tmp_path / "w2", pg_url, tmp_path / "fresh", tmp_path / "w2.log"):
                run = await finished(c, ws, run_id)
            assert run["status"] == "completed" and run["state"]["s0"] == "done", run
    listed = cli(data, "admin", "worker-credential", "list", "--database-url", pg_url).stdout
    assert "to revoke" in listed and "revoked" in listed and "fresh" in listed


async def test_a_worker_credential_is_refused_for_everything_but_working(tmp_path: Path, pg_url: str) -> None:
    with server(tmp_path, pg_url) as (s, _token):
        mint(tmp_path / "server", pg_url, "pool", tmp_path / "cred")
        credential = (tmp_path / "cred").read_text().strip()
        assert (tmp_path / "cred").stat().st_mode & 0o777 == 0o600
        async with RpcClient(s.ws_url, credential) as c:
            frame = await asyncio.wait_for(c.unsolicited.get(), 5)
            assert frame["error"]["code"] == "unauthenticated"
            assert c._reader is not None
            await asyncio.wait_for(c._reader, 10)  # the server closes the socket after the refusal
            assert c.close_code == 4401
        metrics = httpx.get(f"{s.url}/metrics", headers={"Authorization": f"Bearer {credential}"})
        assert metrics.status_code == 401
        mcp = httpx.post(f"{s.url}/mcp", headers={"Authorization": f"Bearer {credential}"}, json={})
        assert mcp.status_code == 401
    # The database keeps its hash, never the secret.
    [(stored,)] = sql(pg_url, "SELECT secret_hash FROM hangar_server.worker_credentials")
    assert credential.split("_")[2] not in stored


async def test_a_made_up_credential_is_refused(tmp_path: Path, pg_url: str) -> None:
    cli(tmp_path / "d", "admin", "trusted-host-exec", "on", "--database-url", pg_url)
    made_up = tmp_path / "cred"
    made_up.write_text("hwk_00000000-0000-4000-8000-000000000000_" + "A" * 43)
    refused = cli(tmp_path / "d", "worker", "--credential-file", str(made_up), check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == ["hangar worker: the worker credential is not known to this database"]
    missing = cli(tmp_path / "d", "worker", check=False)
    assert missing.returncode == 1 and "needs a worker credential" in missing.stderr


async def test_a_server_without_workers_runs_its_steps_itself(tmp_path: Path, pg_url: str) -> None:
    with server(tmp_path, pg_url) as (s, token):
        async with RpcClient(s.ws_url, token) as c:
            ws = (await c.call("workspaces.create", name="alone"))["id"]
            run_id = await start(c, ws, fan_out("here", 2, "echo $HANGAR_ATTEMPT_KEY"))
            run = await finished(c, ws, run_id)
    assert_completed(run)
    assert run["state"]["s0_runDir"].split("/")[-3] == "server"
    assert run["state"]["s0"] == f"pipeline:{run_id}/s0#1"  # in the server, a try is its attempt
    assert sql(pg_url, "SELECT count(*) FROM hangar_server.pipeline_step_queue") == [(0,)]


async def test_a_server_told_to_run_steps_itself_does_so_with_workers_attached(tmp_path: Path, pg_url: str) -> None:
    with server(tmp_path, pg_url) as (s, token):
        data = tmp_path / "server"
        cli(data, "admin", "setting", "pipelines.stepsHere", "true", "--database-url", pg_url)
        mint(data, pg_url, "pool", tmp_path / "cred")
        with hangar_worker(tmp_path / "w1", pg_url, tmp_path / "cred", tmp_path / "w1.log"):
            workers_attached(pg_url, 1)
            async with RpcClient(s.ws_url, token) as c:
                ws = (await c.call("workspaces.create", name="here"))["id"]
                run = await finished(c, ws, await start(c, ws, fan_out("here", 2, "echo hi")))
    assert_completed(run)
    assert run["state"]["s0_runDir"].split("/")[-3] == "server"
    assert sql(pg_url, "SELECT count(*) FROM hangar_server.pipeline_step_queue") == [(0,)]


@pytest.mark.sqlite_only("a worker refused because the records are on SQLite")
def test_a_worker_on_sqlite_is_refused_in_one_sentence(tmp_path: Path) -> None:
    refused = cli(tmp_path / "d", "worker", check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        "hangar worker needs the records in PostgreSQL (give --database-url postgresql://…): "
        "on SQLite the server runs every step itself"
    ]
    assert not (tmp_path / "d").exists()  # nothing was opened or created
    minted = cli(tmp_path / "d", "admin", "worker-credential", "create", "--name", "x", check=False)
    assert minted.returncode == 1 and "needs the records in PostgreSQL" in minted.stderr
