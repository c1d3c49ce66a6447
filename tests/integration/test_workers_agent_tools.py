"""Agents on a ``hangar worker`` reach the product through a server, with a credential the server mints for the
step's try (``hangar.agents.worker_grants``, ``hangar.agents.tools.worker_link``).

Real processes: a ``hangar serve`` and a ``hangar worker --server`` on their own data directories, on the suite's
throwaway PostgreSQL cluster (workers need PostgreSQL: on SQLite the server runs every step itself); a scripted
model endpoint; the real RPC client. A command agent runs on the host here (trusted host execution), so its
script can hand the test the credential it was given, and the test calls the product with it as the agent would.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from hangar.agents.worker_grants import BODY_MAX, GRANTS_PATH
from hangar.core.postgresql import workspace_schema
from hangar.pipelines.worker import LEASE_S
from tests.integration.test_servers_on_one_postgresql import finished
from tests.integration.test_workers import hangar_worker, mint, server, sql, wait_for, workers_attached
from tests.integration.test_workers_agents import OPEN, ask, replies, start
from tests.support.processes import cli
from tests.support.rpc import RpcClient, RpcError
from tests.unit.agents.fake_openai import call, running_fake_openai, text
from tests.unit.agents.support import template

pytestmark = pytest.mark.slow

TOOLS = ["tickets.create", "tickets.list"]


async def titles(c: RpcClient, ws: str) -> list[str]:
    return [t["title"] for t in (await c.call("tickets.list", workspace_id=ws))["tickets"]]


async def refused_at_connect(url: str, token: str) -> str:
    """The code the RPC socket answers a credential it refuses with (it closes the socket after)."""
    async with RpcClient(url, token) as c:
        frame = await asyncio.wait_for(c.unsolicited.get(), 10)
    return str(frame["error"]["code"])


def grant(url: str, bearer: str | None, body: str | dict[str, Any]) -> httpx.Response:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer is not None else {}
    content = body if isinstance(body, str) else json.dumps(body)
    return httpx.post(f"{url}{GRANTS_PATH}", content=content, headers=headers, timeout=30)


def agent_devices(pg_url: str, agent_id: str) -> list[tuple[Any, ...]]:
    return sql(pg_url, "SELECT revoked_at, tools FROM hangar_server.devices WHERE agent_id = %s", agent_id)


async def test_an_openai_agent_on_a_worker_calls_its_product_tools_through_the_server(
    tmp_path: Path, pg_url: str
) -> None:
    async with running_fake_openai() as fake:
        with server(tmp_path, pg_url) as (s, token):
            mint(tmp_path / "server", pg_url, "pool", tmp_path / "cred")
            with hangar_worker(tmp_path / "w1", pg_url, tmp_path / "cred", tmp_path / "w1.log", "--server", s.url):
                workers_attached(pg_url, 1)
                async with RpcClient(s.ws_url, token) as c:
                    ws = (await c.call("workspaces.create", name="tools"))["id"]
                    adapter = {"type": "openai", "baseUrl": fake.url, "model": "m1", "productTools": TOOLS}
                    ada = (await c.call("agents.create", workspace_id=ws, name="Ada", adapter=adapter))["id"]
                    fake.script("m1", call("tickets__create", {"title": "filed from a worker"}), text("filed"))
                    run_id = await start(c, ws, template(OPEN, ask("model", ada, "File it"), tid="tools"))
                    run = await finished(c, ws, run_id, timeout=120)
                    assert run["status"] == "completed", (run, (tmp_path / "w1.log").read_text()[-3000:])
                    assert await titles(c, ws) == ["filed from a worker"]
                    assert await replies(c, ws, run["state"]["space_id"]) == ["filed"]
                    audit = await c.call("audit.list", workspace_id=ws)
    # The model was offered the tools a server declares, and got the server's answer.
    first, second = fake.bodies_for("m1")
    assert {t["function"]["name"] for t in first["tools"]} >= {"tickets__create", "tickets__list"}
    [answer] = [m for m in second["messages"] if m["role"] == "tool"]
    assert "filed from a worker" in answer["content"]
    # The call ran on the server, as the agent: the audit row names the agent, not the worker or the owner.
    rows = [r for r in audit if r["action"] == "tickets.create"]
    assert [r["principal"] for r in rows] == [f"agent:{ada}"], rows
    # The credential the server minted for the try was revoked when the step ended.
    [(revoked_at, tools)] = agent_devices(pg_url, ada)
    assert revoked_at is not None and sorted(tools) == TOOLS


async def test_a_command_agents_credential_follows_its_claim_and_its_access(tmp_path: Path, pg_url: str) -> None:
    handed, go = tmp_path / "handed", tmp_path / "go"
    script = (
        'cat > /dev/null; printf "%s\\n%s\\n" "$HANGAR_MCP_URL" "$HANGAR_MCP_TOKEN" > '
        f"{handed}.part && mv {handed}.part {handed}; "
        f"while [ ! -e {go} ]; do sleep 0.1; done; echo done"
    )
    with server(tmp_path, pg_url) as (s, token):
        data = tmp_path / "server"
        mint(data, pg_url, "pool", tmp_path / "cred")
        other_id = mint(data, pg_url, "other", tmp_path / "other")
        worker_cred, other_cred = (tmp_path / "cred").read_text().strip(), (tmp_path / "other").read_text().strip()
        with hangar_worker(tmp_path / "w1", pg_url, tmp_path / "cred", tmp_path / "w1.log", "--server", s.url):
            workers_attached(pg_url, 1)
            async with RpcClient(s.ws_url, token) as c:
                ws = (await c.call("workspaces.create", name="cmd"))["id"]
                adapter = {"type": "command", "argv": ["bash", "-c", script], "productTools": TOOLS}
                cli_id = (await c.call("agents.create", workspace_id=ws, name="Cli", adapter=adapter))["id"]
                run_id = await start(c, ws, template(OPEN, ask("cmd", cli_id, "Go"), tid="cmd"))
                wait_for(handed.exists, "the command agent's credential", timeout=120)
                url, agent_token = handed.read_text().splitlines()
                assert url == f"{s.url}/mcp"
                [agent_run] = (await c.call("runs.list", workspace_id=ws))["runs"]
                try_key = f"pipeline:{run_id}/cmd#1.1"
                live = {"workspaceId": ws, "runId": agent_run["id"], "tryKey": try_key}

                # The agent's credential reaches the product on the server, as the agent.
                async with RpcClient(s.ws_url, agent_token) as agent:
                    await agent.call("tickets.create", workspace_id=ws, title="first")
                    # It outlives the lease it was minted under: the worker renews it every heartbeat.
                    await asyncio.sleep(LEASE_S + 2)
                    await agent.call("tickets.create", workspace_id=ws, title="after a lease")
                    assert await titles(c, ws) == ["first", "after a lease"]

                    # Only the worker holding the claim gets a credential for it: another live worker credential,
                    # the right one for another run, a device credential, none at all are refused.
                    assert grant(s.url, other_cred, live).status_code == 403
                    not_its_run = grant(s.url, worker_cred, {**live, "runId": "00000000-0000-4000-8000-000000000000"})
                    assert not_its_run.status_code == 403
                    assert grant(s.url, token, live).status_code == 401
                    assert grant(s.url, None, live).status_code == 401
                    assert grant(s.url, worker_cred, {**live, "tryKey": "not a key"}).status_code == 400
                    cli(data, "admin", "worker-credential", "revoke", other_id, "--database-url", pg_url)
                    revoked = grant(s.url, other_cred, live)
                    assert revoked.status_code == 401 and "revoked" in revoked.json()["error"]["message"]

                    # A tool taken from the agent mid-step is refused at its next call; the others still answer.
                    await c.call(
                        "agents.update",
                        workspace_id=ws,
                        agent_id=cli_id,
                        adapter={**adapter, "productTools": ["tickets.list"]},
                    )
                    with pytest.raises(RpcError) as taken:
                        await agent.call("tickets.create", workspace_id=ws, title="after the update")
                    assert taken.value.code == "forbidden"
                    assert await agent.call("tickets.list", workspace_id=ws)
                go.touch()
                run = await finished(c, ws, run_id, timeout=120)
                assert run["status"] == "completed", (run, (tmp_path / "w1.log").read_text()[-3000:])
                assert await titles(c, ws) == ["first", "after a lease"]
                audit = await c.call("audit.list", workspace_id=ws)
                events = await c.call("events.list", workspace_id=ws)

            # Once the step is over its credential is refused, and the worker cannot have it renewed or another
            # minted for the try.
            assert await refused_at_connect(s.ws_url, agent_token) == "unauthenticated"
            assert grant(s.url, worker_cred, live).status_code == 403
            # The request's size: at the limit read (and refused for what it says), one byte past refused unread.
            at_limit = grant(s.url, worker_cred, json.dumps(live).ljust(BODY_MAX))
            assert at_limit.status_code == 403
            past = grant(s.url, worker_cred, json.dumps(live).ljust(BODY_MAX + 1))
            assert past.status_code == 413 and f"{BODY_MAX} bytes" in past.json()["error"]["message"]
        logs = s.log_text() + (tmp_path / "w1.log").read_text()
    # The credential never reached a log, an audit row or an event.
    assert agent_token not in logs
    assert agent_token not in json.dumps(audit) and agent_token not in json.dumps(events)
    assert [r["principal"] for r in audit if r["action"] == "tickets.create"] == [f"agent:{cli_id}"] * 2
    [(revoked_at, tools)] = agent_devices(pg_url, cli_id)
    assert revoked_at is not None and tools == ["tickets.list"]


def newest_device(pg_url: str, agent_id: str) -> str:
    query = "SELECT id FROM hangar_server.devices WHERE agent_id = %s ORDER BY created_at DESC LIMIT 1"
    [(device_id,)] = sql(pg_url, query, agent_id)
    return str(device_id)


def device_tools(pg_url: str, device_id: str) -> list[str]:
    [(tools,)] = sql(pg_url, "SELECT tools FROM hangar_server.devices WHERE id = %s", device_id)
    return list(tools)


def agent_run_of(pg_url: str, ws: str, step_key: str) -> str:
    query = f'SELECT id FROM "{workspace_schema(ws)}".agent_runs WHERE dispatched_by = %s'
    [(run_id,)] = sql(pg_url, query, step_key)
    return str(run_id)


async def reaches(url: str, token: str, ws: str) -> bool:
    try:
        async with RpcClient(url, token) as agent:
            await asyncio.wait_for(agent.call("tickets.list", workspace_id=ws), 10)
    except (RpcError, TimeoutError, ConnectionError, ConnectionClosed):  # a refused credential's socket is closed
        return False
    return True


async def test_an_agent_credential_is_bound_to_the_worker_run_and_try_it_was_minted_for(
    tmp_path: Path, pg_url: str
) -> None:
    """A worker's agent credential is renewed only for the very run and try it was minted for, only while live;
    another worker cannot have it revoked; a try's run gets one."""
    handed, go = tmp_path / "handed", tmp_path / "go"
    script = (
        f"cat > /dev/null; if [ -e {handed}1 ]; then n=2; else n=1; fi; "
        f'printf "%s" "$HANGAR_MCP_TOKEN" > {handed}$n.part && mv {handed}$n.part {handed}$n; '
        f"while [ ! -e {go}$n ]; do sleep 0.1; done; echo done"
    )
    with server(tmp_path, pg_url) as (s, token):
        data = tmp_path / "server"
        mint(data, pg_url, "pool", tmp_path / "cred")
        mint(data, pg_url, "other", tmp_path / "other")
        worker_cred, other_cred = (tmp_path / "cred").read_text().strip(), (tmp_path / "other").read_text().strip()
        with hangar_worker(tmp_path / "w1", pg_url, tmp_path / "cred", tmp_path / "w1.log", "--server", s.url):
            workers_attached(pg_url, 1)
            async with RpcClient(s.ws_url, token) as c:
                ws = (await c.call("workspaces.create", name="bound"))["id"]
                adapter = {"type": "command", "argv": ["bash", "-c", script], "productTools": TOOLS}
                cli_id = (await c.call("agents.create", workspace_id=ws, name="Cli", adapter=adapter))["id"]
                steps = template(OPEN, ask("one", cli_id, "One"), ask("two", cli_id, "Two"), tid="bound")
                run_id = await start(c, ws, steps)
                wait_for(Path(f"{handed}1").exists, "the first step's credential", timeout=120)
                first_token = Path(f"{handed}1").read_text()
                first_try = f"pipeline:{run_id}/one#1.1"
                first = {"workspaceId": ws, "runId": agent_run_of(pg_url, ws, first_try[:-2]), "tryKey": first_try}
                d1 = newest_device(pg_url, cli_id)
                seen: dict[str, Any] = {}

                # A second credential for the same run of the same try is refused.
                seen["second mint"] = grant(s.url, worker_cred, first).status_code
                # Another worker naming this worker's credential is refused and leaves it working.
                seen["other worker"] = grant(s.url, other_cred, {**first, "deviceId": d1}).status_code
                seen["still reaches after it"] = await reaches(s.ws_url, first_token, ws)

                Path(f"{go}1").touch()
                wait_for(Path(f"{handed}2").exists, "the second step's credential", timeout=120)
                second_try = f"pipeline:{run_id}/two#1.1"
                second = {"workspaceId": ws, "runId": agent_run_of(pg_url, ws, second_try[:-2]), "tryKey": second_try}
                d2 = newest_device(pg_url, cli_id)
                # A renewal narrows the credential's tools to those the agent has now, whatever the row held.
                widen = "UPDATE hangar_server.devices SET tools = %s::json WHERE id = %s"
                sql(pg_url, widen, json.dumps([*TOOLS, "workspaces.delete"]), d2)
                try:
                    narrowed = lambda: sorted(device_tools(pg_url, d2)) == TOOLS  # noqa: E731
                    # In a thread: the open RPC socket's keepalive is answered meanwhile.
                    await asyncio.to_thread(wait_for, narrowed, "a renewal", 30)
                    seen["renewal narrows"] = True
                except AssertionError:
                    seen["renewal narrows"] = device_tools(pg_url, d2)
                # The first step's credential left unrevoked (as by a worker that died before revoking it), then
                # renewed naming the second step's live claim: refused and revoked, never revived.
                sql(pg_url, "UPDATE hangar_server.devices SET revoked_at = NULL WHERE id = %s", d1)
                seen["other run's credential"] = grant(s.url, worker_cred, {**second, "deviceId": d1}).status_code
                seen["other run's credential reaches"] = await reaches(s.ws_url, first_token, ws)
                # A credential past its deadline is not renewed, even for its own live claim.
                expire = "UPDATE hangar_server.devices SET expires_at = now() - interval '1 minute' WHERE id = %s"
                sql(pg_url, expire, d2)
                seen["expired"] = grant(s.url, worker_cred, {**second, "deviceId": d2}).status_code
                Path(f"{go}2").touch()
                await finished(c, ws, run_id, timeout=120)
    assert seen == {
        "second mint": 409,
        "other worker": 403,
        "still reaches after it": True,
        "other run's credential": 403,
        "other run's credential reaches": False,
        "expired": 403,
        "renewal narrows": True,
    }


async def test_a_worker_without_a_server_tells_its_agents_why_they_have_no_tools(tmp_path: Path, pg_url: str) -> None:
    script = 'cat > /dev/null; echo "unavailable=$HANGAR_MCP_UNAVAILABLE token=${HANGAR_MCP_TOKEN:-none}"'
    with server(tmp_path, pg_url) as (s, token):
        mint(tmp_path / "server", pg_url, "pool", tmp_path / "cred")
        with hangar_worker(tmp_path / "w1", pg_url, tmp_path / "cred", tmp_path / "w1.log"):
            workers_attached(pg_url, 1)
            async with RpcClient(s.ws_url, token) as c:
                ws = (await c.call("workspaces.create", name="alone"))["id"]
                adapter = {"type": "command", "argv": ["bash", "-c", script]}
                cli_id = (await c.call("agents.create", workspace_id=ws, name="Cli", adapter=adapter))["id"]
                run_id = await start(c, ws, template(OPEN, ask("cmd", cli_id, "Go"), tid="alone"))
                run = await finished(c, ws, run_id, timeout=120)
    assert run["state"]["cmd"] == (
        "unavailable=this worker was started without --server, so its agents cannot reach the product token=none"
    )


def test_a_worker_given_a_server_that_is_not_an_address_is_refused(tmp_path: Path, pg_url: str) -> None:
    for bad in ("ftp://host", "http://", "http://host/path", "host:8080"):
        refused = cli(tmp_path / "d", "worker", "--database-url", pg_url, "--server", bad, check=False)
        assert refused.returncode == 2 and "--server" in refused.stderr and "http(s)://HOST[:PORT]" in refused.stderr
    # Plain http would carry the worker credential and agents' tokens in clear: only to this host.
    for far in ("http://example.com", "http://10.0.0.1:8080", "http://localhost.example.com"):
        refused = cli(tmp_path / "d", "worker", "--database-url", pg_url, "--server", far, check=False)
        assert refused.returncode == 2 and "loopback" in refused.stderr, refused.stderr
