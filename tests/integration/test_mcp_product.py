"""The product's MCP endpoint, driven by the official MCP SDK client over Streamable HTTP against a real server:
tools generated from the op registry, the dispatcher's checks, tool errors with the socket's codes, sessions bound
to the credential that opened them, sessionless clients, and the audit row's door."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import mcp.types as mt
import pytest
from mcp import ClientSession
from mcp.shared.exceptions import MCPError

from hangar.core.principal import Role
from hangar.identity import DeviceScope, IdentityService
from hangar.rpc.mcp.deferred import DeferredDoor
from hangar.rpc.registry import OpRegistry
from hangar.server.parts import all_parts
from tests.support.mcp import mcp_client, mcp_session, payload
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server

JSON_AND_SSE = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with running_server(tmp_path / "data") as s:
        yield s


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
    # No field carries pydantic's restated title ("Createdat"): names say it, and agents pay for every byte.
    assert "title" not in create.output_schema["properties"]["createdAt"]
    assert create.input_schema["properties"]["title"] == {"type": "string"}  # a field named title stays


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
    async with httpx.AsyncClient(base_url=srv.url) as http:
        opened = await http.post(
            "/mcp", json=INIT, headers={**JSON_AND_SSE, "authorization": f"Bearer {srv.owner_token}"}
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


# Ops whose success changes what the next call sees (a new pairing code, a regenerated token): their outcome kind
# and code are compared, not their values.
async def _over_socket(socket: RpcClient, op: str, args: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "ok", await socket.call(op, **args)
    except RpcError as err:
        return err.code, None


async def _over_mcp(session: ClientSession, op: str, args: dict[str, Any]) -> tuple[str, Any]:
    result = await session.call_tool(op, args)
    body = payload(result)
    if result.is_error:
        return str(body["error"]["code"]), None
    return "ok", body["items"] if set(body) == {"items"} else body


# Reads that mint a short-lived grant (a signed URL whose token carries its second-granular expiry): two calls a
# moment apart may fall on either side of a second, so both doors must answer the same grant for the same path.
MINTED_READS = {"workspaces.export"}


def _comparable(op: str, result: Any) -> Any:
    if op not in MINTED_READS:
        return result
    return {key: (urlsplit(value).path if key == "url" else type(value).__name__) for key, value in result.items()}


async def test_both_doors_answer_every_op_alike_for_every_role(srv: RunningServer) -> None:
    """For each op and each role, the same call (no arguments but the workspace) through the socket and as a
    tool: the same refusal code, or both answered, with the same result for reads."""
    ws = await srv.new_workspace()
    tokens = {role.name: await srv.new_user_token(ws, role, name=role.name) for role in Role}
    registry = OpRegistry(fn for part in all_parts() for fn in part.ops)
    compared, outcomes = 0, set()
    for role, token in tokens.items():
        async with RpcClient(srv.ws_url, token) as socket, mcp_session(srv, token) as session:
            for spec in registry.specs.values():
                if spec.kind == "watch":
                    continue
                args: dict[str, Any] = {"workspace_id": ws} if spec.scope == "workspace" else {}
                first = await _over_socket(socket, spec.name, args)
                second = await _over_mcp(session, spec.name, args)
                assert first[0] == second[0], (role, spec.name, first, second)
                outcomes.add(first[0])
                if first[0] == "ok" and spec.kind == "read":
                    assert _comparable(spec.name, first[1]) == _comparable(spec.name, second[1]), (role, spec.name)
                compared += 1
    assert compared == 4 * len([s for s in registry.specs.values() if s.kind != "watch"])
    # The table covers answers and each kind of refusal the order of checks produces.
    assert {"ok", "forbidden", "invalid_args"} <= outcomes, outcomes


async def test_an_ask_first_guardrail_asks_the_person_in_their_client(srv: RunningServer) -> None:
    ws = await srv.new_workspace()
    async with RpcClient(srv.ws_url, srv.owner_token) as socket:
        await socket.call("guardrails.set", workspace_id=ws, askFirst=["secretAccess"])
    call = {"workspace_id": ws, "agentId": "no-such-agent"}
    asked: list[str] = []

    def answering(approve: bool | None) -> Any:
        async def elicit(context: Any, params: Any) -> mt.ElicitResult:
            asked.append(params.message)
            if approve is None:
                return mt.ElicitResult(action="decline")
            return mt.ElicitResult(action="accept", content={"approve": approve})

        return elicit

    # A client that cannot be asked gets the refusal naming the rule.
    async with mcp_session(srv, srv.owner_token) as session:
        refused = payload(await session.call_tool("agents.delete", call))["error"]
        assert refused["code"] == "refused" and "asks first for secretAccess" in refused["message"]
    for answer in (None, False):
        async with mcp_session(srv, srv.owner_token, elicitation_callback=answering(answer)) as session:
            assert payload(await session.call_tool("agents.delete", call))["error"]["code"] == "refused"
    async with mcp_session(srv, srv.owner_token, elicitation_callback=answering(True)) as session:
        ran = payload(await session.call_tool("agents.delete", call))["error"]
    assert ran["code"] == "not_found"  # approved: the op itself ran and found no such agent
    assert len(asked) == 3 and "asks first for secretAccess" in asked[-1]
    async with RpcClient(srv.ws_url, srv.owner_token) as socket:
        rows = await socket.call("audit.list", workspace_id=ws, target="op:agents.delete")
    assert [(r["action"], r.get("door"), r["details"]["actionClasses"]) for r in rows] == [
        ("guardrails.approved", "mcp", ["secretAccess"])
    ]


@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")  # the 2025 revisions' way, served here
async def test_records_are_resources_and_watches_are_subscriptions(srv: RunningServer) -> None:
    ws = await srv.new_workspace()
    door = await srv.ctx.service(DeferredDoor).door()
    updates: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, mt.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))

    async with RpcClient(srv.ws_url, srv.owner_token) as socket:
        space = await socket.call("spaces.create", workspace_id=ws, title="Plan")
        for n in range(3):
            await socket.call("messages.post", workspace_id=ws, space_id=space["id"], content=f"m{n}")
        ticket = await socket.call("tickets.create", workspace_id=ws, title="Fix it")
        uri = f"hangar://workspaces/{ws}/spaces/{space['id']}"
        async with mcp_session(srv, srv.owner_token, message_handler=on_message) as session:
            listed = (await session.list_resource_templates()).resource_templates
            templates = {t.uri_template: t for t in listed}
            assert "hangar://workspaces/{workspaceId}/spaces/{spaceId}" in templates
            # A subscribable resource shows the shape of each event of its watch: per type, camelCase payloads.
            shapes = templates["hangar://workspaces/{workspaceId}/spaces/{spaceId}"].meta["hangar/events"]  # type: ignore[index]
            posted = shapes["$defs"]["WorkspaceMessagePostedInSpace"]["properties"]
            assert posted["type"]["const"] == "workspace.messagePosted"
            assert list(shapes["$defs"]["WorkspaceMessagePosted"]["properties"]) == ["spaceId", "message"]
            rig = templates["hangar://workspaces/{workspaceId}/rigs/{rigId}"].meta["hangar/events"]  # type: ignore[index]
            assert "PhaseNotice" in rig["$defs"] and rig["discriminator"]["propertyName"] == "type"
            assert templates["hangar://workspaces/{workspaceId}/tickets/{ticketId}"].meta is None
            read = await session.read_resource(uri)
            body = json.loads(read.contents[0].text)  # type: ignore[union-attr]
            assert body["space"]["title"] == "Plan" and [m["content"] for m in body["messages"]] == ["m0", "m1", "m2"]
            got = json.loads(
                (await session.read_resource(f"hangar://workspaces/{ws}/tickets/{ticket['id']}")).contents[0].text  # type: ignore[union-attr]
            )
            assert got["ticket"]["title"] == "Fix it"
            with pytest.raises(MCPError, match="not_found"):
                await session.read_resource(f"hangar://workspaces/{ws}/spaces/nope")
            with pytest.raises(MCPError, match="no resource at"):
                await session.read_resource("hangar://elsewhere/x")
            await session.subscribe_resource(uri)
            await socket.call("messages.post", workspace_id=ws, space_id=space["id"], content="news")
            for _ in range(100):
                if updates:
                    break
                await asyncio.sleep(0.05)
            assert updates and updates[0] == uri
            await asyncio.sleep(0.3)  # a post is a few events (the message, the space's change): let them all arrive
            await session.unsubscribe_resource(uri)
            seen = len(updates)
            await socket.call("messages.post", workspace_id=ws, space_id=space["id"], content="more")
            await asyncio.sleep(0.5)
            assert len(updates) == seen
            await session.subscribe_resource(uri)
            assert len(door.subscriptions.following) == 1
        # The client ended its session: what it followed ends with it.
        for _ in range(100):
            if not door.subscriptions.following:
                break
            await asyncio.sleep(0.05)
        assert door.subscriptions.following == {}


async def test_a_long_op_sends_progress_when_the_client_asks(tmp_path: Path) -> None:
    from tests.integration.core_parts import TEST_PART

    heard: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, message))

    async with (
        running_server(tmp_path / "data", parts=[*all_parts(), TEST_PART]) as server,
        mcp_session(server, server.owner_token) as session,
    ):
        quiet = await session.call_tool("test.slow", {"seconds": 0.2})
        assert quiet.is_error is False and heard == []
        done = await session.call_tool("test.slow", {"seconds": 2.4}, progress_callback=on_progress)
    assert done.is_error is False
    assert [p for p, _m in heard] == sorted({p for p, _m in heard}) and len(heard) >= 2
    assert any(m and "test.slow: half way" in m for _p, m in heard), heard


async def test_one_credential_holds_at_most_its_cap_of_sessions(srv: RunningServer) -> None:
    door = await srv.ctx.service(DeferredDoor).door()
    door.seats.limits.per_credential = 2
    owner_device = (await srv.ctx.service(IdentityService).authenticate(srv.owner_token)).device_id
    other = await srv.new_user_token(name="ann")
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}

    def headers(token: str, session_id: str | None = None) -> dict[str, str]:
        extra = {"mcp-session-id": session_id} if session_id else {}
        return {**JSON_AND_SSE, "authorization": f"Bearer {token}", **extra}

    async with httpx.AsyncClient(base_url=srv.url) as http:

        async def open_session(token: str) -> httpx.Response:
            return await http.post("/mcp", json=INIT, headers=headers(token))

        first, second = [(await open_session(srv.owner_token)).headers["mcp-session-id"] for _ in range(2)]
        refused = await open_session(srv.owner_token)
        assert refused.status_code == 429
        error = refused.json()["error"]
        assert refused.json()["id"] == 1 and "mcp-session-id" not in refused.headers
        assert "already holds 2 open MCP sessions" in error["message"] and "DELETE" in error["message"]
        # Nothing else is disturbed: the open sessions answer, another credential opens its own.
        assert (await http.post("/mcp", json=listing, headers=headers(srv.owner_token, first))).status_code == 200
        assert (await open_session(other)).status_code == 200
        # Ending a session frees its seat.
        ended = await http.delete("/mcp", headers=headers(srv.owner_token, first))
        assert ended.status_code == 200
        third = await open_session(srv.owner_token)
        assert third.status_code == 200, third.text
        assert (await open_session(srv.owner_token)).status_code == 429
        # So does the idle timeout: a session opened with a short one ends by itself and gives its seat back.
        await http.delete("/mcp", headers=headers(srv.owner_token, second))
        door.sessions.session_idle_timeout = 0.3
        assert (await open_session(srv.owner_token)).status_code == 200
        assert door.seats.held(owner_device) == 2
        for _ in range(100):
            if door.seats.held(owner_device) < 2:
                break
            await asyncio.sleep(0.05)
        assert door.seats.held(owner_device) == 1
        assert (await open_session(srv.owner_token)).status_code == 200


async def test_rows_written_by_work_a_call_left_running_carry_no_door(tmp_path: Path) -> None:
    """A row written while the call is served (by the op or a task it awaits) records the door; one written by a
    task the op left running after it answered is no call through a door, and records none."""
    from tests.integration.core_parts import TEST_PART

    async with running_server(tmp_path / "data", parts=[*all_parts(), TEST_PART]) as server:
        ws = await server.new_workspace()
        async with RpcClient(server.ws_url, server.owner_token) as socket:
            await socket.call("test.later", workspace_id=ws)
            async with mcp_session(server, server.owner_token) as session:
                assert (await session.call_tool("test.later", {"workspace_id": ws})).is_error is False
            for _ in range(100):
                rows = await socket.call("audit.list", workspace_id=ws, target="test:later")
                if len(rows) == 6:
                    break
                await asyncio.sleep(0.05)
    written = sorted((r["action"], r.get("door") or "") for r in rows)
    assert written == [
        ("test.after", ""),
        ("test.after", ""),
        ("test.now", "mcp"),
        ("test.now", "socket"),
        ("test.within", "mcp"),
        ("test.within", "socket"),
    ]


async def test_a_2026_client_follows_resources_through_subscriptions_listen(srv: RunningServer) -> None:
    """The 2026-07-28 revision has no sessions and no resources/subscribe: a client follows resources on one
    subscriptions/listen stream, and hears of changes only of what it may see."""
    ws = await srv.new_workspace()
    guest = await srv.new_user_token(ws, Role.guest, name="gus")
    door = await srv.ctx.service(DeferredDoor).door()
    async with RpcClient(srv.ws_url, srv.owner_token) as socket:
        space = await socket.call("spaces.create", workspace_id=ws, title="Plan")
        ticket = await socket.call("tickets.create", workspace_id=ws, title="Fix it")
        uri = f"hangar://workspaces/{ws}/spaces/{space['id']}"
        async with mcp_client(srv, srv.owner_token, "auto") as client:
            assert client.protocol_version == "2026-07-28"
            assert client.server_capabilities.resources is not None and client.server_capabilities.resources.subscribe
            body = json.loads((await client.read_resource(uri)).contents[0].text)  # type: ignore[union-attr]
            assert body["space"]["title"] == "Plan"
            async with client.listen(resource_subscriptions=[uri], tools_list_changed=True) as sub:
                assert sub.honored.resource_subscriptions == [uri] and sub.honored.tools_list_changed is True
                assert door.listening.open_streams == 1
                await socket.call("messages.post", workspace_id=ws, space_id=space["id"], content="news")
                async with asyncio.timeout(10):
                    event = await anext(sub)
                assert getattr(event, "uri", None) == uri
            for _ in range(100):  # the client closed its stream: the server lets go of it
                if door.listening.open_streams == 0:
                    break
                await asyncio.sleep(0.05)
            assert door.listening.open_streams == 0
            # What cannot be followed is refused before anything is acknowledged, naming why.
            with pytest.raises(MCPError, match="change only when read again"):
                async with client.listen(resource_subscriptions=[f"hangar://workspaces/{ws}/tickets/{ticket['id']}"]):
                    pass
            with pytest.raises(MCPError, match="not_found"):
                async with client.listen(resource_subscriptions=[f"hangar://workspaces/{ws}/spaces/nope"]):
                    pass
        async with mcp_client(srv, guest, "2026-07-28") as client:
            with pytest.raises(MCPError, match="forbidden"):
                async with client.listen(resource_subscriptions=[f"hangar://workspaces/{ws}/events"]):
                    pass
        # The server stopping ends every stream gracefully: the client's loop ends, nothing is reported lost.
        async with (
            mcp_client(srv, srv.owner_token, "auto") as client,
            client.listen(resource_subscriptions=[uri]) as sub,
        ):
            door.listening.close()
            assert [event async for event in sub] == []
    held = door.seats.held((await srv.ctx.service(IdentityService).authenticate(srv.owner_token)).device_id)
    assert held == 0  # a listen stream holds a seat only while it is open


async def test_a_plain_tool_call_is_answered_in_one_exchange(srv: RunningServer) -> None:
    """A tool call that asked for no progress is answered as plain JSON (Streamable HTTP lets any POST be); one
    that asked for progress gets the SDK's stream. Either keeps the session alive and bound to its credential."""
    door = await srv.ctx.service(DeferredDoor).door()
    door.sessions.session_idle_timeout = 0.6
    other = await srv.new_user_token(name="eve")

    def call(n: int, meta: dict[str, Any] | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"name": "server.info", "arguments": {}}
        if meta is not None:
            params["_meta"] = meta
        return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}

    async with httpx.AsyncClient(base_url=srv.url) as http:
        opened = await http.post(
            "/mcp", json=INIT, headers={**JSON_AND_SSE, "authorization": f"Bearer {srv.owner_token}"}
        )
        sid = opened.headers["mcp-session-id"]
        head = {
            **JSON_AND_SSE,
            "authorization": f"Bearer {srv.owner_token}",
            "mcp-session-id": sid,
            "mcp-protocol-version": "2025-06-18",
        }
        # Busy for longer than the idle timeout, with calls answered outside the SDK's transport only.
        for n in range(8):
            plain = await http.post("/mcp", json=call(n + 2), headers=head)
            assert plain.status_code == 200 and plain.headers["content-type"] == "application/json", plain.text
            assert plain.headers["mcp-session-id"] == sid
            assert plain.json()["result"]["structuredContent"]["name"] == "Hangar"
            await asyncio.sleep(0.15)
        streamed = await http.post("/mcp", json=call(20, {"progressToken": "p"}), headers=head)
        assert streamed.status_code == 200 and streamed.headers["content-type"].startswith("text/event-stream")
        assert '"structuredContent"' in streamed.text
        # Errors keep the SDK's shapes: an unknown tool is a JSON-RPC error, bad params are invalid params.
        unknown = await http.post("/mcp", json={**call(21), "params": {"name": "nope"}}, headers=head)
        assert unknown.json()["error"]["code"] == -32602 and "no tool named" in unknown.json()["error"]["message"]
        malformed = await http.post("/mcp", json={**call(22), "params": {"name": 7}}, headers=head)
        assert malformed.json()["error"]["code"] == -32602
        # Another credential with this session id, or a session that ended, is not found, as from the SDK.
        stolen = await http.post("/mcp", json=call(23), headers={**head, "authorization": f"Bearer {other}"})
        assert stolen.status_code == 404
        await asyncio.sleep(1.0)  # idle now: the session expires
        expired = await http.post("/mcp", json=call(24), headers=head)
        assert expired.status_code == 404


async def test_a_call_answered_in_one_exchange_can_be_cancelled(tmp_path: Path) -> None:
    from tests.integration.core_parts import TEST_PART

    slow = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "test.slow", "arguments": {"seconds": 8}},
    }
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
    async with (
        running_server(tmp_path / "data", parts=[*all_parts(), TEST_PART]) as server,
        httpx.AsyncClient(base_url=server.url, timeout=30) as http,
    ):
        owner = {**JSON_AND_SSE, "authorization": f"Bearer {server.owner_token}"}
        sid = (await http.post("/mcp", json=INIT, headers=owner)).headers["mcp-session-id"]
        head = {**owner, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"}
        started = asyncio.get_running_loop().time()
        call = asyncio.create_task(http.post("/mcp", json=slow, headers=head))
        await asyncio.sleep(0.5)
        stranger = await server.new_user_token(name="eve")  # another credential cannot cancel it
        await http.post("/mcp", json=cancel, headers={**head, "authorization": f"Bearer {stranger}"})
        await asyncio.sleep(0.2)
        assert not call.done()
        acknowledged = await http.post("/mcp", json=cancel, headers=head)
        assert acknowledged.status_code == 202
        answer = (await call).json()
        assert answer == {"jsonrpc": "2.0", "id": 2, "error": {"code": -32800, "message": "Request cancelled"}}
        assert asyncio.get_running_loop().time() - started < 4
        info = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "server.info"}}
        assert (await http.post("/mcp", json=info, headers=head)).json()["result"]["structuredContent"]["name"]


class Updates:
    """The ``notifications/resources/updated`` a session hears (its message handler)."""

    def __init__(self) -> None:
        self.uris: list[str] = []

    async def __call__(self, message: Any) -> None:
        if isinstance(message, mt.ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))

    async def first(self) -> str:
        for _ in range(100):
            if self.uris:
                break
            await asyncio.sleep(0.05)
        return self.uris[0]


@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")
async def test_a_narrow_credential_sees_its_tools_and_its_follows_outlive_a_token_rotation(srv: RunningServer) -> None:
    ws = await srv.new_workspace()
    identity = srv.ctx.service(IdentityService)
    scope = DeviceScope(workspace_id=ws, read_only=True, client_id="c")
    device_id, token = await identity.new_device(srv.owner_id, "Reader (OAuth)", scope=scope)
    updates = Updates()

    async with RpcClient(srv.ws_url, srv.owner_token) as socket:
        space = await socket.call("spaces.create", workspace_id=ws, title="Plan")
        uri = f"hangar://workspaces/{ws}/spaces/{space['id']}"
        async with mcp_session(srv, token, message_handler=updates) as session:
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"members.list", "messages.list", "server.info"} <= names
            assert not names & {"spaces.create", "messages.post", "workspaces.create", "members.invite"}
            await session.subscribe_resource(uri)
            await identity.rotate_device_token(device_id)  # an OAuth refresh: same credential, new token
            await socket.call("messages.post", workspace_id=ws, space_id=space["id"], content="after rotation")
            assert await updates.first() == uri
            await identity.revoke_device_id(device_id)
            await asyncio.sleep(0.5)
            seen = len(updates.uris)
            await socket.call("messages.post", workspace_id=ws, space_id=space["id"], content="after revocation")
            await asyncio.sleep(0.8)
            assert len(updates.uris) == seen


@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")
async def test_a_removed_member_hears_of_nothing_posted_after_the_removal(srv: RunningServer) -> None:
    """A follow is a watch run through the dispatcher, which checks the caller again before each event: a post
    made the moment the removal is answered sends the removed guest no update."""
    ws = await srv.new_workspace()
    guest = await srv.new_user_token(ws, Role.guest, name="gus")
    guest_id = (await srv.ctx.service(IdentityService).authenticate(guest)).user_id
    door = await srv.ctx.service(DeferredDoor).door()
    updates = Updates()

    async with RpcClient(srv.ws_url, srv.owner_token) as socket:
        space = await socket.call("spaces.create", workspace_id=ws, title="Plan")
        uri = f"hangar://workspaces/{ws}/spaces/{space['id']}"
        async with mcp_session(srv, guest, message_handler=updates) as session:
            await session.subscribe_resource(uri)
            await socket.call("messages.post", workspace_id=ws, space_id=space["id"], content="before")
            assert await updates.first() == uri
            await asyncio.sleep(0.3)  # a post is a few events: let them all arrive
            seen = len(updates.uris)
            await socket.call("members.remove", workspace_id=ws, user_id=guest_id)
            await socket.call("messages.post", workspace_id=ws, space_id=space["id"], content="after")
            for _ in range(100):  # the follow ends at the first event after the removal
                if not door.subscriptions.following:
                    break
                await asyncio.sleep(0.05)
            assert door.subscriptions.following == {}
            assert len(updates.uris) == seen
