"""Agent steps on ``hangar worker`` processes: an ``openai`` agent's step and a command agent's step driven by a
worker (the server drives none), a worker killed -9 mid command-agent turn and the run taken over by another
worker that sees the earlier try and posts the reply once, and a revoked credential fencing a command agent's turn.

Real processes throughout: a ``hangar serve`` and ``hangar worker`` processes, each on a data directory of its own
(as on separate hosts), on the suite's throwaway PostgreSQL cluster; a scripted model endpoint; real RPC clients;
kill -9. Command agents run on the host here (trusted host execution, a server setting every process reads from
the database): the tests are about the queue and the take-over; ``test_workers_confined.py`` runs a
command agent in an enclosure on the worker's host.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from hangar.agents.part import RECOVER_INTERVAL_S
from hangar.core.leases import Leases
from hangar.core.postgresql import workspace_schema
from tests.integration.test_servers_on_one_postgresql import finished
from tests.integration.test_workers import (
    group_alive,
    hangar_worker,
    kill9,
    mint,
    server,
    sql,
    wait_for,
    workers_attached,
)
from tests.support.processes import cli
from tests.support.rpc import RpcClient
from tests.unit.agents.fake_openai import call, running_fake_openai
from tests.unit.agents.support import template

pytestmark = pytest.mark.slow

SUMMARY = {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}


async def command_agent(c: RpcClient, ws: str, name: str, script: str) -> str:
    adapter = {"type": "command", "argv": ["bash", "-c", script]}
    return str((await c.call("agents.create", workspace_id=ws, name=name, adapter=adapter))["id"])


def ask(step_id: str, agent_id: str, prompt: str, **config: Any) -> dict[str, Any]:
    return {
        "id": step_id,
        "body": "conversation.promptAgent",
        "config": {"agentId": agent_id, "prompt": prompt, "outputKey": step_id, **config},
    }


OPEN = {"id": "open", "body": "messaging.createSpace", "config": {"outputKey": "space_id"}}


async def start(c: RpcClient, ws: str, tpl: dict[str, Any]) -> str:
    await c.call("pipelines.templates.create", workspace_id=ws, template=tpl)
    return str((await c.call("pipelines.runs.start", workspace_id=ws, templateId=tpl["id"]))["runId"])


def agent_runs(pg_url: str, ws: str) -> list[tuple[Any, ...]]:
    schema = workspace_schema(ws)
    return sql(pg_url, f'SELECT dispatched_by, status, outcome, owner FROM "{schema}".agent_runs ORDER BY created_at')


def queue(pg_url: str) -> list[tuple[Any, ...]]:
    return sql(pg_url, "SELECT step_id, status, tries, worker_id, history FROM hangar_server.pipeline_step_queue")


async def replies(c: RpcClient, ws: str, space_id: str) -> list[str]:
    msgs = (await c.call("messages.list", workspace_id=ws, space_id=space_id))["messages"]
    return [m["content"] for m in msgs if m["author"]["kind"] == "agent"]


async def test_an_agent_step_and_a_command_agent_step_are_driven_by_a_worker_not_the_server(
    tmp_path: Path, pg_url: str
) -> None:
    worker_data = tmp_path / "w1"
    script = 'cat > /dev/null; echo "key=$HANGAR_ATTEMPT_KEY earlier=[$HANGAR_EARLIER_ATTEMPTS] dir=$PWD"'
    async with running_fake_openai() as fake:
        with server(tmp_path, pg_url) as (s, token):
            mint(tmp_path / "server", pg_url, "pool", tmp_path / "cred")
            with hangar_worker(worker_data, pg_url, tmp_path / "cred", tmp_path / "w1.log") as w1:
                workers_attached(pg_url, 1)
                async with RpcClient(s.ws_url, token) as c:
                    ws = (await c.call("workspaces.create", name="agents"))["id"]
                    adapter = {"type": "openai", "baseUrl": fake.url, "model": "m1"}
                    ada = (await c.call("agents.create", workspace_id=ws, name="Ada", adapter=adapter))["id"]
                    fake.script("m1", call("submit_output", {"summary": "all good"}))
                    cli = await command_agent(c, ws, "Cli", script)
                    tpl = template(
                        OPEN,
                        ask("model", ada, "Summarise {{topic}}", outputSchema=SUMMARY),
                        ask("cmd", cli, "Run it"),
                        tid="agents",
                    )
                    await c.call("pipelines.templates.create", workspace_id=ws, template=tpl)
                    started = await c.call(
                        "pipelines.runs.start", workspace_id=ws, templateId="agents", payload={"topic": "the launch"}
                    )
                    run_id = started["runId"]
                    run = await finished(c, ws, run_id, timeout=120)
                    assert run["status"] == "completed", (run, (tmp_path / "w1.log").read_text()[-3000:])
                    state = run["state"]
                    assert state["model"] == {"summary": "all good"}
                    space_id = state["space_id"]
                    # What the worker's runs wrote is in the shared records, served by the server.
                    said = await replies(c, ws, space_id)
                    runs = (await c.call("runs.list", workspace_id=ws))["runs"]
                    events = [e["type"] for e in await c.call("events.list", workspace_id=ws)]
                worker_pid = w1.pid
    key = f"pipeline:{run_id}/cmd#1"
    assert said == [state["cmd"]], said
    reply = dict(part.split("=", 1) for part in state["cmd"].split())
    assert (reply["key"], reply["earlier"]) == (f"{key}.1", "[]")
    assert reply["dir"].startswith(str(worker_data)), reply  # the space's folder on the worker's host
    assert {r["dispatchedBy"] for r in runs} == {f"pipeline:{run_id}/model#1", key}
    assert {(r["status"], r["outcome"]) for r in runs} == {("finished", "ok")}
    assert events.count("agents.runStarted") == 2 and events.count("agents.runFinished") == 2
    assert events.count("agents.turnStarted") == events.count("agents.turnFinished") >= 2
    # The worker drove both runs (their recorded owner is its process), and the queue says so.
    owners = {r[3].partition(":")[0] for r in agent_runs(pg_url, ws)}
    assert owners == {str(worker_pid)}, owners
    rows = {r[0]: r[1:4] for r in queue(pg_url)}
    assert set(rows) == {"model", "cmd"} and {r[:2] for r in rows.values()} == {("done", 1)}, rows
    assert not (tmp_path / "server" / ws / "spaces" / space_id / "cmd").exists()
    assert os.getpid() != worker_pid


async def test_a_worker_killed_mid_command_turn_leaves_the_run_to_another_which_sees_the_earlier_try(
    tmp_path: Path, pg_url: str
) -> None:
    ran = tmp_path / "ran"
    script = (
        f'cat > /dev/null; echo "$HANGAR_ATTEMPT_KEY earlier=$HANGAR_EARLIER_ATTEMPTS" >> {ran}; sleep 4; '
        'echo "replied by $HANGAR_ATTEMPT_KEY"'
    )
    with server(tmp_path, pg_url) as (s, token):
        mint(tmp_path / "server", pg_url, "pool", tmp_path / "cred")
        async with RpcClient(s.ws_url, token) as c:
            ws = (await c.call("workspaces.create", name="killed"))["id"]
            agent = await command_agent(c, ws, "Slow", script)
            with hangar_worker(tmp_path / "w1", pg_url, tmp_path / "cred", tmp_path / "w1.log") as w1:
                workers_attached(pg_url, 1)
                run_id = await start(c, ws, template(OPEN, ask("cmd", agent, "go"), tid="slow"))
                wait_for(ran.exists, "the first worker to start the command")
                async with asyncio.timeout(60):  # and its turn's start to be recorded (its events are written apart)
                    while "agents.turnStarted" not in [e["type"] for e in await c.call("events.list", workspace_id=ws)]:
                        await asyncio.sleep(0.1)
                kill9(w1)
            # The server leaves the run its worker left behind to the step's next try (its attempt is queued),
            # although its lease has stayed free past the take-over delay and the server looked for abandoned runs.
            await asyncio.sleep(Leases(make_url(pg_url)).takeover_after + 3 * RECOVER_INTERVAL_S)
            assert [r[1] for r in agent_runs(pg_url, ws)] == ["running"]
            with hangar_worker(tmp_path / "w2", pg_url, tmp_path / "cred", tmp_path / "w2.log"):
                run = await finished(c, ws, run_id, timeout=120)
            assert run["status"] == "completed", (run, (tmp_path / "w2.log").read_text()[-3000:])
            said = await replies(c, ws, run["state"]["space_id"])
            events = await c.call("events.list", workspace_id=ws)
    first, second = f"pipeline:{run_id}/cmd#1.1", f"pipeline:{run_id}/cmd#1.2"
    assert ran.read_text().splitlines() == [f"{first} earlier=", f"{second} earlier={first}"]
    assert said == [f"replied by {second}"]  # the reply posted once, by the try that finished the run
    assert run["state"]["cmd"] == f"replied by {second}"
    [(dispatched_by, status, outcome, _owner)] = agent_runs(pg_url, ws)  # one run, taken over, not a second
    assert (dispatched_by, status, outcome) == (f"pipeline:{run_id}/cmd#1", "finished", "ok")
    turns = [(e["type"], e["payload"].get("outcome")) for e in events if e["type"].startswith("agents.turn")]
    turns = [t for t in turns if t[0] != "agents.turnWaiting"]
    assert turns[0] == ("agents.turnStarted", None) and turns[-1] == ("agents.turnFinished", "ok"), turns
    assert ("agents.turnFinished", "interrupted") in turns  # the dead try's turn closed by the next
    assert [e["type"] for e in events].count("agents.runFinished") == 1
    [(_step, qstatus, tries, _worker, history)] = queue(pg_url)
    assert (qstatus, tries) == ("done", 2)
    assert [(t["key"], t["outcome"]) for t in history] == [(first, "lapsed"), (second, "ok")]
    assert history[0]["progress"]["runId"] == history[1]["progress"]["runId"]


async def test_a_revoked_credential_fences_a_command_agents_turn(tmp_path: Path, pg_url: str) -> None:
    started = tmp_path / "started"
    # The command's process group is its own (its shell leads it); a try stopped in time never says "finished".
    script = f'cat > /dev/null; echo "$HANGAR_ATTEMPT_KEY $$" >> {started}; sleep 60; echo finished'
    with server(tmp_path, pg_url) as (s, token):
        data = tmp_path / "server"
        revoked_id = mint(data, pg_url, "to revoke", tmp_path / "cred")
        mint(data, pg_url, "fresh", tmp_path / "fresh")
        async with RpcClient(s.ws_url, token) as c:
            ws = (await c.call("workspaces.create", name="fenced"))["id"]
            agent = await command_agent(c, ws, "Fenced", script)
            with hangar_worker(tmp_path / "w1", pg_url, tmp_path / "cred", tmp_path / "w1.log") as w1:
                workers_attached(pg_url, 1)
                run_id = await start(c, ws, template(OPEN, ask("cmd", agent, "go"), tid="fenced"))
                wait_for(started.exists, "the worker to start the command")
                cli(data, "admin", "worker-credential", "revoke", revoked_id, "--database-url", pg_url)
                assert w1.wait(30) == 1
            assert "was revoked" in (tmp_path / "w1.log").read_text()
            [(first_key, pgid)] = [line.split() for line in started.read_text().splitlines()]
            wait_for(lambda: not group_alive(int(pgid)), "the fenced command to be stopped", timeout=20)
            # Nothing of the run's end was recorded by the fenced worker: it is left for the next try.
            assert [r[1] for r in agent_runs(pg_url, ws)] == ["running"]
            await c.call("agents.update", workspace_id=ws, agent_id=agent, adapter=quick_adapter(started))
            with hangar_worker(tmp_path / "w2", pg_url, tmp_path / "fresh", tmp_path / "w2.log"):
                run = await finished(c, ws, run_id, timeout=120)
            assert run["status"] == "completed", (run, (tmp_path / "w2.log").read_text()[-3000:])
            said = await replies(c, ws, run["state"]["space_id"])
    assert said == ["finished"]
    assert first_key == f"pipeline:{run_id}/cmd#1.1"
    assert started.read_text().splitlines()[1:] == [f"pipeline:{run_id}/cmd#1.2"]
    assert [r[1:3] for r in agent_runs(pg_url, ws)] == [("finished", "ok")]


def quick_adapter(started: Path) -> dict[str, Any]:
    """The agent changed between the tries (read from the database at the turn): the next try finishes at once."""
    script = f'cat > /dev/null; echo "$HANGAR_ATTEMPT_KEY" >> {started}; echo finished'
    return {"type": "command", "argv": ["bash", "-c", script]}


async def test_an_interrupt_asked_of_the_server_stops_the_run_a_worker_drives(tmp_path: Path, pg_url: str) -> None:
    started = tmp_path / "started"
    script = f'cat > /dev/null; echo "$$" > {started}; sleep 60; echo finished'
    with server(tmp_path, pg_url) as (s, token):
        mint(tmp_path / "server", pg_url, "pool", tmp_path / "cred")
        async with RpcClient(s.ws_url, token) as c:
            ws = (await c.call("workspaces.create", name="interrupted"))["id"]
            agent = await command_agent(c, ws, "Long", script)
            with hangar_worker(tmp_path / "w1", pg_url, tmp_path / "cred", tmp_path / "w1.log"):
                workers_attached(pg_url, 1)
                run_id = await start(c, ws, template(OPEN, ask("cmd", agent, "go"), tid="long"))
                wait_for(lambda: started.exists() and started.read_text().strip(), "the worker to start the command")
                [agent_run] = (await c.call("runs.list", workspace_id=ws))["runs"]
                ended = await c.call("runs.interrupt", workspace_id=ws, runId=agent_run["id"])
                assert ended["outcome"] == "interrupted", ended
                wait_for(lambda: not group_alive(int(started.read_text())), "the command to be stopped", timeout=20)
                run = await finished(c, ws, run_id)
    assert run["status"] == "failed", run
    [step] = [st for st in run["steps"] if st["stepId"] == "cmd"]
    assert step["error"] == "the run of agent 'Long' ended interrupted: the run was interrupted", step
    [(_step, qstatus, tries, _worker, _history)] = queue(pg_url)
    assert (qstatus, tries) == ("done", 1)  # the worker harvested the interrupted run: the step failed once


async def test_a_team_dispatch_is_driven_by_a_worker_and_harvested_in_member_order(tmp_path: Path, pg_url: str) -> None:
    item = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    with server(tmp_path, pg_url) as (s, token):
        mint(tmp_path / "server", pg_url, "pool", tmp_path / "cred")
        with hangar_worker(tmp_path / "w1", pg_url, tmp_path / "cred", tmp_path / "w1.log") as w1:
            workers_attached(pg_url, 1)
            async with RpcClient(s.ws_url, token) as c:
                ws = (await c.call("workspaces.create", name="team"))["id"]
                ids = [await command_agent(c, ws, f"M{n}", f'cat > /dev/null; echo "{{\\"n\\": {n}}}"') for n in (2, 1)]
                team = await c.call("teams.create", workspace_id=ws, name="Crew", memberIds=ids)
                crew = {
                    "id": "crew",
                    "body": "team.dispatch",
                    "config": {
                        "teamId": team["id"],
                        "prompt": "count",
                        "outputKey": "counts",
                        "outputSchema": {"type": "array", "items": item},
                    },
                }
                run = await finished(c, ws, await start(c, ws, template(OPEN, crew, tid="team")), timeout=120)
            worker_pid = w1.pid
    assert run["status"] == "completed", (run, (tmp_path / "w1.log").read_text()[-3000:])
    assert run["state"]["counts"] == [{"n": 2}, {"n": 1}]
    runs = agent_runs(pg_url, ws)
    assert len(runs) == 2 and {r[3].partition(":")[0] for r in runs} == {str(worker_pid)}, runs
    assert {r[1:3] for r in runs} == {("finished", "ok")}
    assert [r[:2] for r in queue(pg_url)] == [("crew", "done")]
