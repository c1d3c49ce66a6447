"""``GET /metrics`` on the real server: only the server owner's credential reads it, and each family moves when
the thing it counts happens (op calls by op, door and outcome; events delivered; pipeline runs and steps)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server

TRIGGER_ONLY = {
    "id": "just-start",
    "name": "Just start",
    "steps": [{"id": "start", "kind": "trigger", "body": "pipeline.trigger"}],
    "edges": [],
}


async def scrape(srv: RunningServer, token: str | None = None) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``/metrics`` as ``{(name, sorted labels): value}``, read with the owner's credential."""
    async with httpx.AsyncClient() as http:
        r = await http.get(f"{srv.url}/metrics", headers={"Authorization": f"Bearer {token or srv.owner_token}"})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(r.text)
        for s in family.samples
    }


def value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_metrics_are_the_server_owners_alone(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv:
        ws = await srv.new_workspace("ops")
        member = await srv.new_user_token(ws, "admin", name="wsadmin")
        async with httpx.AsyncClient() as http:
            nobody = await http.get(f"{srv.url}/metrics")
            assert nobody.status_code == 401 and "hangar_" not in nobody.text
            forged = await http.get(f"{srv.url}/metrics", headers={"Authorization": "Bearer not-a-credential"})
            assert forged.status_code == 401
            # A workspace admin is not the server's operator.
            theirs = await http.get(f"{srv.url}/metrics", headers={"Authorization": f"Bearer {member}"})
            assert theirs.status_code == 401 and "hangar_" not in theirs.text
            owner = await http.get(f"{srv.url}/metrics", headers={"Authorization": f"Bearer {srv.owner_token}"})
            assert owner.status_code == 200 and "hangar_rpc_calls_total" in owner.text


async def test_op_calls_are_counted_by_op_door_and_outcome(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv:
        ws = await srv.new_workspace("ops")
        member = await srv.new_user_token(ws, "member", name="mem")
        async with RpcClient(srv.ws_url, srv.owner_token) as owner, RpcClient(srv.ws_url, member) as mem:
            for _ in range(3):
                await owner.call("server.info")
            with pytest.raises(RpcError) as refused:
                await mem.call("members.invite", workspace_id=ws, role="owner")
            assert refused.value.code == "forbidden"
            with pytest.raises(RpcError) as unknown:
                await owner.call("secret-op-name-sk-live-123")
            assert unknown.value.code == "unknown_op"
        samples = await scrape(srv)
        assert value(samples, "hangar_rpc_calls_total", op="server.info", door="socket", outcome="ok") == 3
        assert value(samples, "hangar_rpc_calls_total", op="members.invite", door="socket", outcome="forbidden") == 1
        # The name a caller typed never becomes a label value.
        assert value(samples, "hangar_rpc_calls_total", op="unknown", door="socket", outcome="unknown_op") == 1
        assert not any("secret-op-name" in v for _, labels in samples for _, v in labels)
        assert value(samples, "hangar_rpc_call_seconds_count", op="server.info", door="socket") == 3


async def test_events_and_pipeline_runs_move_their_families(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv:
        ws = await srv.new_workspace("pipes")
        before = await scrape(srv)
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            await c.call("pipelines.templates.create", workspace_id=ws, template=TRIGGER_ONLY)
            started = await c.call("pipelines.runs.start", workspace_id=ws, templateId="just-start", payload={})
            for _ in range(400):
                run = await c.call("pipelines.runs.get", workspace_id=ws, runId=started["runId"])
                if run["status"] == "completed":
                    break
                await asyncio.sleep(0.05)
            assert run["status"] == "completed"
        for _ in range(100):  # the event tail delivers within its interval
            after = await scrape(srv)
            if value(after, "hangar_event_delivery_lag_seconds_count") > value(
                before, "hangar_event_delivery_lag_seconds_count"
            ):
                break
            await asyncio.sleep(0.05)
        assert value(after, "hangar_event_delivery_lag_seconds_count") > value(
            before, "hangar_event_delivery_lag_seconds_count"
        )
        assert value(after, "hangar_pipeline_runs_total", state="running") == 1
        assert value(after, "hangar_pipeline_runs_total", state="completed") == 1
        assert value(after, "hangar_pipeline_steps_total", state="completed") == 1
        assert value(after, "hangar_rpc_calls_total", op="pipelines.runs.start", door="socket", outcome="ok") == 1


async def test_each_server_counts_its_own_and_off_counts_nothing(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path / "a") as a,
        running_server(tmp_path / "b", metrics=False) as b,
        running_server(tmp_path / "c") as c,
    ):
        async with RpcClient(a.ws_url, a.owner_token) as client:
            await client.call("server.info")
        async with RpcClient(b.ws_url, b.owner_token) as client:
            await client.call("server.info")
        assert value(await scrape(a), "hangar_rpc_calls_total", op="server.info", door="socket", outcome="ok") == 1
        assert value(await scrape(c), "hangar_rpc_calls_total", op="server.info", door="socket", outcome="ok") == 0
        async with httpx.AsyncClient() as http:
            off = await http.get(f"{b.url}/metrics", headers={"Authorization": f"Bearer {b.owner_token}"})
        assert off.status_code == 404 and "HANGAR_METRICS" in off.text
        assert b.ctx.metrics.exposition() == b""


async def test_mcp_sessions_and_calls_through_the_mcp_door(tmp_path: Path) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "server.info", "arguments": {}}}
    async with running_server(tmp_path) as srv, httpx.AsyncClient(base_url=srv.url, timeout=30) as http:
        base = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "authorization": f"Bearer {srv.owner_token}",
        }
        opened = await http.post("/mcp", json=init, headers=base)
        assert opened.status_code == 200, opened.text
        sid = opened.headers["mcp-session-id"]
        session = {**base, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"}
        done = await http.post("/mcp", json=call, headers=session)
        assert done.status_code == 200, done.text
        samples = await scrape(srv)
        assert value(samples, "hangar_mcp_sessions") == 1
        assert value(samples, "hangar_mcp_sessions_opened_total") == 1
        assert value(samples, "hangar_rpc_calls_total", op="server.info", door="mcp", outcome="ok") == 1
        assert value(samples, "hangar_rpc_calls_total", op="server.info", door="socket", outcome="ok") == 0
        assert (await http.delete("/mcp", headers=session)).status_code == 200
        for _ in range(100):
            samples = await scrape(srv)
            if value(samples, "hangar_mcp_sessions") == 0:
                break
            await asyncio.sleep(0.05)
        assert value(samples, "hangar_mcp_sessions") == 0
        assert value(samples, "hangar_mcp_sessions_opened_total") == 1


async def test_sso_sign_ins_by_outcome(tmp_path: Path) -> None:
    from tests.integration.test_sso_oidc_provider import ACCOUNTS
    from tests.peers.oidc_provider import drive_login, oidc_sign_in

    async with running_server(tmp_path) as srv, oidc_sign_in(srv, ACCOUNTS):
        async with httpx.AsyncClient(follow_redirects=False, timeout=30) as http:
            ok = await drive_login(http, f"{srv.url}/oidc/login?relay=desktop", login="alice")
            assert ok.status_code in (200, 303), ok.text  # the hand-off page, or its redirect
            stale = await http.get(f"{srv.url}/oidc/callback?state=made-up&code=x")
            assert stale.status_code == 400
        samples = await scrape(srv)
        assert value(samples, "hangar_sso_sign_ins_total", protocol="oidc", outcome="ok") == 1
        assert value(samples, "hangar_sso_sign_ins_total", protocol="oidc", outcome="state") == 1


async def test_chat_events_agent_runs_and_model_latency(tmp_path: Path) -> None:
    from tests.support.chat import ALICE, GENERAL, until, world
    from tests.unit.agents.fake_openai import text

    async with world(tmp_path) as w:  # links alice with a slash command: one chat event already
        w.model.script("m", text("Hello from Ada."))
        await w.slack.mention(GENERAL, ALICE, "what is up?")

        async def ran() -> dict[tuple[str, tuple[tuple[str, str], ...]], float] | None:
            samples = await scrape(w.srv)
            return samples if value(samples, "hangar_agent_runs_total", state="ok") == 1 else None

        samples = await until(ran)
        assert value(samples, "hangar_chat_events_total", provider="chatprovider", kind="command") == 1
        assert value(samples, "hangar_chat_events_total", provider="chatprovider", kind="message") == 1
        assert value(samples, "hangar_agent_runs_total", state="running") == 1
        assert value(samples, "hangar_agent_model_seconds_count", adapter="openai") == 1


async def test_chat_provider_errors_are_counted(tmp_path: Path) -> None:
    from tests.peers.slack_emulator import APP_TOKEN, BOT_TOKEN
    from tests.support.chat import PROVIDER, until
    from tests.support.ports import free_port
    from tests.unit.agents.support import server_parts

    nobody = f"http://127.0.0.1:{free_port()}/api/"  # a provider that cannot be reached
    async with (
        running_server(tmp_path, parts=server_parts(), chatprovider_api_url=nobody) as srv,
        RpcClient(srv.ws_url, srv.owner_token) as client,
    ):
        ws = await srv.new_workspace("acme")
        credentials = {"botToken": BOT_TOKEN, "appToken": APP_TOKEN}
        await client.call("chat.connect", workspace_id=ws, provider=PROVIDER, credentials=credentials)

        async def failed() -> bool:
            return value(await scrape(srv), "hangar_chat_provider_errors_total", provider=PROVIDER) >= 1

        await until(failed)


def test_website_requests_are_counted_in_the_servers_metrics(tmp_path: Path) -> None:
    from tests.integration.test_operations_logs import served

    with served(tmp_path / "data") as srv:
        site = srv.urls["website"]
        assert httpx.get(f"{site}/", timeout=30).status_code == 200
        assert httpx.get(f"{site}/no-such-page-{srv.owner}", timeout=30).status_code == 404
        r = httpx.get(f"{srv.urls['server']}/metrics", headers={"Authorization": f"Bearer {srv.owner}"}, timeout=30)
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(r.text)
        for s in family.samples
    }
    assert value(samples, "hangar_site_requests_total", method="GET", status="2xx") == 1
    assert value(samples, "hangar_site_requests_total", method="GET", status="4xx") == 1
    assert srv.owner not in r.text  # a path is never a label
