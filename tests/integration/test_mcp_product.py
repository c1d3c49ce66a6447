"""The product's MCP endpoint, driven by the official MCP SDK client over Streamable HTTP against a real server:
tools generated from the op registry, the dispatcher's checks, tool errors with the socket's codes, sessions bound
to the credential that opened them, sessionless clients, and the audit row's door."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from hangar.core.principal import Role
from hangar.rpc.registry import OpRegistry
from hangar.server.parts import all_parts
from tests.support.rpc import RpcClient
from tests.support.server import RunningServer, running_server

JSON_AND_SSE = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with running_server(tmp_path / "data") as s:
        yield s


@asynccontextmanager
async def mcp_session(srv: RunningServer, token: str) -> AsyncIterator[ClientSession]:
    client = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=30)
    async with (
        client,
        streamable_http_client(f"{srv.url}/mcp", http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def payload(result: Any) -> dict[str, Any]:
    assert result.structured_content is not None
    return dict(result.structured_content)


async def test_every_op_but_watches_is_a_tool_with_its_schemas(srv: RunningServer) -> None:
    async with mcp_session(srv, srv.owner_token) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
    registry = OpRegistry(fn for part in all_parts() for fn in part.ops)
    assert set(tools) == {s.name for s in registry.specs.values() if s.kind != "watch"}
    create = tools["spaces.create"]
    assert create.input_schema["required"][:2] == ["workspace_id", "title"]
    assert create.input_schema["additionalProperties"] is False
    assert "createdAt" in create.output_schema["properties"]
    assert create.annotations.read_only_hint is False and create.annotations.destructive_hint is False
    assert tools["workspaces.list"].annotations.read_only_hint is True
    assert tools["members.remove"].annotations.destructive_hint is True
    assert tools["audit.list"].output_schema["properties"]["items"]["type"] == "array"


async def test_a_tool_call_is_the_op_through_the_one_dispatcher(srv: RunningServer) -> None:
    async with mcp_session(srv, srv.owner_token) as session:
        created = payload(await session.call_tool("workspaces.create", {"name": "Acme"}))
        ws = created["id"]
        assert created["name"] == "Acme"
        listed = payload(await session.call_tool("workspaces.list", {}))
        assert [w["id"] for w in listed["items"]] == [ws]
        space = payload(await session.call_tool("spaces.create", {"workspace_id": ws, "title": "Plan"}))
        posted = await session.call_tool(
            "messages.post", {"workspace_id": ws, "space_id": space["id"], "content": "hello"}
        )
        assert posted.is_error is False
        assert json.loads(posted.content[0].text)["content"] == "hello"  # type: ignore[union-attr]
    async with RpcClient(srv.ws_url, srv.owner_token) as socket:
        rows = await socket.call("audit.list", workspace_id=ws)
        over_socket = await socket.call("spaces.get", workspace_id=ws, space_id=space["id"])
    doors = {row["action"]: row.get("door") for row in rows}
    assert doors["spaces.create"] == "mcp"
    assert over_socket["id"] == space["id"] and over_socket["title"] == "Plan"


async def test_refusals_are_tool_errors_with_the_socket_codes(srv: RunningServer) -> None:
    ws = await srv.new_workspace()
    guest = await srv.new_user_token(ws, Role.guest, name="gus")
    async with mcp_session(srv, guest) as session:
        refused = await session.call_tool("spaces.create", {"workspace_id": ws, "title": "x"})
        assert refused.is_error is True
        assert payload(refused)["error"]["code"] == "forbidden"
        assert refused.content[0].text.startswith("forbidden: spaces.create needs the member role")  # type: ignore[union-attr]
        bad = await session.call_tool("messages.list", {"workspace_id": ws, "space_id": 7})
        assert payload(bad)["error"]["code"] == "invalid_args" and "space_id" in payload(bad)["error"]["message"]
        missing = await session.call_tool("members.list", {})
        assert payload(missing)["error"]["code"] == "workspace_required"
        owner_only = await session.call_tool("server.users", {})
        assert payload(owner_only)["error"]["code"] == "forbidden"
        with pytest.raises(MCPError, match=r"no tool named 'events\.watch'"):
            await session.call_tool("events.watch", {"workspace_id": ws})
        with pytest.raises(MCPError, match="no tool named 'nope'"):
            await session.call_tool("nope", {})


async def test_guardrails_answer_as_over_the_socket(srv: RunningServer) -> None:
    ws = await srv.new_workspace()
    async with RpcClient(srv.ws_url, srv.owner_token) as socket:
        await socket.call("guardrails.set", workspace_id=ws, readOnly=True)
    async with mcp_session(srv, srv.owner_token) as session:
        refused = await session.call_tool("spaces.create", {"workspace_id": ws, "title": "x"})
        assert payload(refused)["error"]["code"] == "refused" and "read-only" in payload(refused)["error"]["message"]
        assert payload(await session.call_tool("spaces.list", {"workspace_id": ws}))["spaces"] == []


async def test_without_a_valid_credential_the_answer_points_to_the_metadata(srv: RunningServer) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    async with httpx.AsyncClient(base_url=srv.url) as http:
        for headers in ({}, {"authorization": "Bearer not-a-credential"}, {"authorization": "Basic eDp5"}):
            r = await http.post("/mcp", json=init, headers={**JSON_AND_SSE, **headers})
            assert r.status_code == 401
            assert 'resource_metadata="' in r.headers["www-authenticate"]
            assert r.headers["www-authenticate"].split('"')[1].endswith("/.well-known/oauth-protected-resource")
        meta = (await http.get("/.well-known/oauth-protected-resource")).json()
    assert (
        meta["resource"].endswith("/mcp")
        and meta["authorization_servers"]
        and "header" in meta["bearer_methods_supported"]
    )


async def test_a_session_belongs_to_the_credential_that_opened_it(srv: RunningServer) -> None:
    other = await srv.new_user_token(name="eve")
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    async with httpx.AsyncClient(base_url=srv.url) as http:
        opened = await http.post(
            "/mcp", json=init, headers={**JSON_AND_SSE, "authorization": f"Bearer {srv.owner_token}"}
        )
        assert opened.status_code == 200, opened.text
        session_id = opened.headers["mcp-session-id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        stolen = await http.post(
            "/mcp",
            json=listing,
            headers={**JSON_AND_SSE, "authorization": f"Bearer {other}", "mcp-session-id": session_id},
        )
        assert stolen.status_code == 404
        unknown = await http.post(
            "/mcp",
            json=listing,
            headers={**JSON_AND_SSE, "authorization": f"Bearer {srv.owner_token}", "mcp-session-id": "f" * 32},
        )
        assert unknown.status_code == 404


async def test_a_client_that_keeps_no_session_is_served(srv: RunningServer) -> None:
    headers = {**JSON_AND_SSE, "authorization": f"Bearer {srv.owner_token}", "mcp-protocol-version": "2025-06-18"}
    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "server.info", "arguments": {}}}
    async with httpx.AsyncClient(base_url=srv.url) as http:
        r = await http.post("/mcp", json=call, headers=headers)
        assert r.status_code == 200, r.text
        assert r.json()["result"]["structuredContent"]["name"] == "Hangar"
        assert "mcp-session-id" not in r.headers
        big = await http.post("/mcp", content=b"{" + b" " * (1024 * 1024 + 10) + b"}", headers=headers)
        assert big.status_code == 413
