"""The MCP endpoint's sessions against a real server over HTTP: one member minting credentials cannot fill the
endpoint (sessions are capped per user, below the endpoint's bound), the credentials limited to one workspace share
that workspace's cap, each cap on both sides of its line, and idle sessions expire sooner once the endpoint is
half full. The endpoint's bound (10,000 in the SDK) is lowered for the test, and the caps with it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from hangar.core.principal import Role
from hangar.identity import DeviceScope, IdentityService
from hangar.rpc.mcp.deferred import DeferredDoor
from hangar.rpc.mcp.door import McpDoor
from tests.support.server import RunningServer, running_server

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
LISTING = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
JSON_AND_SSE = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def headers(token: str, session_id: str | None = None) -> dict[str, str]:
    extra = {"mcp-session-id": session_id} if session_id else {}
    return {**JSON_AND_SSE, "authorization": f"Bearer {token}", **extra}


async def open_session(http: httpx.AsyncClient, token: str) -> httpx.Response:
    return await http.post("/mcp", json=INIT, headers=headers(token))


async def door_of(srv: RunningServer, bound: int) -> McpDoor:
    door = await srv.ctx.service(DeferredDoor).door()
    door.sessions.max_sessions = bound
    return door


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30) as client:
        yield client


async def test_one_member_minting_credentials_cannot_fill_the_endpoint(tmp_path: Path) -> None:
    caps = {"mcp_sessions_per_credential": 8, "mcp_sessions_per_user": 30}
    async with running_server(tmp_path / "data", **caps) as srv, httpx.AsyncClient(base_url=srv.url) as http:
        await door_of(srv, 100)
        ws = await srv.new_workspace()
        member = await srv.ctx.service(IdentityService).create_user(email="m@example.test", display_name="m")
        await srv.ctx.service(IdentityService).add_member(ws, member.id, Role.member)
        identity = srv.ctx.service(IdentityService)
        # The attack: fifteen credentials of one member, each opening sessions up to its own cap.
        credentials = [await identity.issue_device(member.id, f"minted-{n}") for n in range(15)]
        answers = [(await open_session(http, c)).status_code for c in credentials for _ in range(8)]
        # At the member's cap (30) every one opened; past it every further one is refused, naming the cap.
        assert answers[:30] == [200] * 30 and set(answers[30:]) == {429}, answers
        refused = await open_session(http, credentials[-1])
        assert "you already hold 30 open MCP sessions" in refused.json()["error"]["message"]
        # Everybody else still gets in.
        colleague = await srv.new_user_token(ws, name="colleague")
        assert (await open_session(http, colleague)).status_code == 200
        assert (await open_session(http, srv.owner_token)).status_code == 200


async def test_the_credentials_limited_to_a_workspace_share_its_cap(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path / "data", mcp_sessions_per_workspace=3) as srv,
        httpx.AsyncClient(base_url=srv.url) as http,
    ):
        ws, other_ws = await srv.new_workspace("one"), await srv.new_workspace("two")
        identity = srv.ctx.service(IdentityService)

        async def narrow(name: str, workspace: str) -> str:
            user = await identity.create_user(email=f"{name}@example.test", display_name=name)
            await identity.add_member(workspace, user.id, Role.member)
            return await identity.issue_device(user.id, "grant", scope=DeviceScope(workspace_id=workspace))

        # Three people's credentials limited to the workspace: at its cap, all open.
        for n in range(3):
            assert (await open_session(http, await narrow(f"p{n}", ws))).status_code == 200
        # A fourth person's, one past it: refused, naming the workspace's cap.
        fourth = await narrow("p3", ws)
        refused = await open_session(http, fourth)
        assert refused.status_code == 429
        assert "limited to this workspace already hold 3" in refused.json()["error"]["message"]
        # Another workspace's credentials, and the same person's credential for all of them, are not held to it.
        assert (await open_session(http, await narrow("q", other_ws))).status_code == 200
        p3 = (await identity.authenticate(fourth)).user_id
        assert (await open_session(http, await identity.issue_device(p3, "whole"))).status_code == 200


async def test_idle_sessions_expire_sooner_once_the_endpoint_is_half_full(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data") as srv, httpx.AsyncClient(base_url=srv.url) as http:
        door = await door_of(srv, 8)  # under pressure from 4 open sessions
        door.book.pressure_idle_s = 0.5
        token = srv.owner_token

        async def still_open(session: str) -> bool:
            return (await http.post("/mcp", json=LISTING, headers=headers(token, session))).status_code == 200

        first = [(await open_session(http, token)).headers["mcp-session-id"] for _ in range(3)]
        await asyncio.sleep(1.5)
        # Below the line: idle sessions keep the SDK's idle timeout (30 minutes).
        assert [await still_open(s) for s in first] == [True] * 3
        fourth = (await open_session(http, token)).headers["mcp-session-id"]
        assert await still_open(fourth)
        # At the line (four open): the next initialize brings every idle session's end forward.
        fifth = (await open_session(http, token)).headers["mcp-session-id"]
        for _ in range(100):
            if len(door.sessions._server_instances) <= 1:
                break
            await asyncio.sleep(0.05)
        assert [await still_open(s) for s in [*first, fourth]] == [False] * 4
        assert len(door.sessions._server_instances) <= 1, fifth
