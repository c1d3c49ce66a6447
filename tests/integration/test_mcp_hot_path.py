"""The ``tools/call`` hot path of the product MCP endpoint (``hangar.rpc.mcp.exchange``) against a real server: the
same request answered by it and by the SDK's whole way (the door's ``exchanges.enabled`` off) gives the same
JSON-RPC answer byte for byte, in a session and without one, for every kind of answer; what it does not serve
reaches the SDK unchanged; and every refusal holds on it (no credential, a credential revoked mid-session, a
session of another credential or ended, a role short of the op's)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from hangar.core.principal import Role
from hangar.identity import IdentityService
from hangar.rpc.mcp.deferred import DeferredDoor
from hangar.rpc.mcp.door import McpDoor
from tests.support.mcp import mcp_session, payload
from tests.support.rpc import RpcClient
from tests.support.server import RunningServer, running_server

VERSION = "2025-06-18"
JSON_AND_SSE = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def init(version: str = VERSION) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }


def call(n: int | str, name: Any, arguments: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with running_server(tmp_path / "data") as s:
        yield s


class Door:
    """The server's MCP door, counting the calls its hot path serves and switching it off on demand."""

    def __init__(self, door: McpDoor) -> None:
        self.door = door
        self.hot_calls = 0
        served = door.tool_calls.call_plain

        async def counted(*args: Any) -> Any:
            self.hot_calls += 1
            return await served(*args)

        door.tool_calls.call_plain = counted  # type: ignore[method-assign]

    @contextmanager
    def sdk_only(self) -> Iterator[None]:
        self.door.exchanges.enabled = False
        try:
            yield
        finally:
            self.door.exchanges.enabled = True


async def door_of(srv: RunningServer) -> Door:
    return Door(await srv.ctx.service(DeferredDoor).door())


def message_of(r: httpx.Response) -> bytes:
    """The JSON-RPC message an answer carries: a JSON body, or the data of the SSE event that carries it."""
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        lines = [line[5:].strip() for line in r.text.splitlines() if line.startswith("data:")]
        return next(line for line in lines if line.startswith("{")).encode()
    return r.content


async def open_session(http: httpx.AsyncClient, token: str, version: str = VERSION) -> dict[str, str]:
    """A session of ``token``: the headers its requests carry."""
    head = {**JSON_AND_SSE, "authorization": f"Bearer {token}"}
    opened = await http.post("/mcp", json=init(version), headers=head)
    assert opened.status_code == 200, opened.text
    head = {**head, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": version}
    note = await http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=head)
    assert note.status_code == 202
    return head


async def test_the_hot_path_answers_as_the_sdk_byte_for_byte(srv: RunningServer) -> None:
    """Each call twice, by the hot path and by the SDK's whole way: the same JSON-RPC answer, byte for byte. In a
    session, at each revision sessionless, for a result (with text beyond ASCII), a refused op (a role short of
    it, an owner's op, arguments the op refuses, a missing workspace), a name that is no tool, a watch, and params
    the revision refuses."""
    ws = await srv.new_workspace(name="Café ☕ «ops»")
    guest = await srv.new_user_token(ws, Role.guest, name="gus")
    door = await door_of(srv)
    cases: list[tuple[str, Any, Any]] = [
        (srv.owner_token, "server.info", {}),
        (srv.owner_token, "server.info", None),
        (srv.owner_token, "workspaces.list", {}),
        (guest, "spaces.create", {"workspace_id": ws, "title": "x"}),
        (guest, "server.users", {}),
        (guest, "messages.list", {"workspace_id": ws, "space_id": 7}),
        (guest, "members.list", {}),
        (guest, "members.list", {"workspace_id": ws}),
        (guest, "nope", {}),
        (guest, "events.watch", {"workspace_id": ws}),
        (guest, 7, {}),
        (guest, "server.info", [1, 2]),
    ]
    async with httpx.AsyncClient(base_url=srv.url, timeout=30) as http:
        sessions = {token: await open_session(http, token) for token in (srv.owner_token, guest)}
        compared = 0
        for n, (token, name, arguments) in enumerate(cases):
            body = call(n + 2, name, arguments)
            heads = [
                sessions[token],
                *(
                    {**JSON_AND_SSE, "authorization": f"Bearer {token}", "mcp-protocol-version": version}
                    for version in ("2025-03-26", "2025-06-18", "2025-11-25")
                ),
                {**JSON_AND_SSE, "authorization": f"Bearer {token}"},  # sessionless, no revision named
            ]
            for head in heads:
                before = door.hot_calls
                hot = await http.post("/mcp", json=body, headers=head)
                assert door.hot_calls == before + (0 if name == 7 or arguments == [1, 2] else 1), (name, head)
                with door.sdk_only():
                    sdk = await http.post("/mcp", json=body, headers=head)
                assert door.hot_calls == before + (0 if name == 7 or arguments == [1, 2] else 1)
                assert hot.status_code == sdk.status_code == 200, (hot.text, sdk.text)
                assert hot.headers["content-type"] == "application/json"
                assert hot.headers.get("mcp-session-id") == head.get("mcp-session-id")
                assert message_of(hot) == message_of(sdk), (name, head.get("mcp-protocol-version"))
                compared += 1
        assert compared == len(cases) * 5
        # What each kind answered, read once: the shapes the SDK's handler gives.
        owner = sessions[srv.owner_token]
        listed = json.loads((await http.post("/mcp", json=call(90, "workspaces.list", {}), headers=owner)).content)
        assert listed["result"]["structuredContent"]["items"][0]["name"] == "Café ☕ «ops»"
        assert "Café ☕ «ops»" in listed["result"]["content"][0]["text"]  # the text too, not escaped
        head = sessions[guest]
        refused = (await http.post("/mcp", json=call(91, "server.users", {}), headers=head)).json()["result"]
        assert refused["isError"] is True and refused["structuredContent"]["error"]["code"] == "forbidden"
        unknown = (await http.post("/mcp", json=call(92, "nope", {}), headers=head)).json()
        assert unknown["error"]["code"] == -32602 and "no tool named 'nope'" in unknown["error"]["message"]
        malformed = (await http.post("/mcp", json=call(93, 7, {}), headers=head)).json()
        assert malformed["error"] == {"code": -32602, "message": "Invalid request parameters", "data": ""}


async def test_what_the_hot_path_does_not_serve_reaches_the_sdk_unchanged(srv: RunningServer) -> None:
    """Requests that are no plain tool call, or whose headers the SDK must judge, get the same answer with the hot
    path on as with it off, and none of them reaches it."""
    door = await door_of(srv)
    async with httpx.AsyncClient(base_url=srv.url, timeout=30) as http:
        session = await open_session(http, srv.owner_token)
        sessionless = {**JSON_AND_SSE, "authorization": f"Bearer {srv.owner_token}"}
        plain = call(5, "server.info", {})
        cases: list[tuple[str, Any, dict[str, str]]] = [
            ("a batch", [plain], session),
            ("a batch, sessionless", [plain], sessionless),
            ("a notification", {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}, session),
            ("another method", {"jsonrpc": "2.0", "id": 6, "method": "ping"}, sessionless),
            ("asking for progress", {**plain, "params": {**plain["params"], "_meta": {}}}, sessionless),
            ("a fractional id", {**plain, "id": 1.5}, sessionless),
            ("no jsonrpc version", {k: v for k, v in plain.items() if k != "jsonrpc"}, sessionless),
            ("SSE only accepted", plain, {**session, "accept": "text/event-stream"}),
            ("SSE only accepted, sessionless", plain, {**sessionless, "accept": "text/event-stream"}),
            ("no JSON content type", plain, {**session, "content-type": "text/plain"}),
            ("another revision than the session's", plain, {**session, "mcp-protocol-version": "2025-03-26"}),
            ("no revision in a session", plain, {k: v for k, v in session.items() if k != "mcp-protocol-version"}),
            ("an unknown revision", plain, {**session, "mcp-protocol-version": "1999-01-01"}),
            ("an unknown revision, sessionless", plain, {**sessionless, "mcp-protocol-version": "1999-01-01"}),
            ("the 2026 revision", plain, {**sessionless, "mcp-protocol-version": "2026-07-28"}),
        ]
        for what, body, head in cases:
            hot = await http.post("/mcp", json=body, headers=head)
            with door.sdk_only():
                sdk = await http.post("/mcp", json=body, headers=head)
            assert door.hot_calls == 0, what
            assert hot.status_code == sdk.status_code, (what, hot.text, sdk.text)
            assert hot.headers.get("content-type") == sdk.headers.get("content-type"), what
            if hot.content and hot.status_code != 202:
                assert message_of(hot) == message_of(sdk), what
        # The plain call itself is the hot path's, in the session and without one.
        for head in (session, sessionless):
            assert (await http.post("/mcp", json=plain, headers=head)).json()["result"]["isError"] is False
        assert door.hot_calls == 2


async def test_refusals_hold_on_the_hot_path(srv: RunningServer) -> None:
    ws = await srv.new_workspace()
    door = await door_of(srv)
    mia = await srv.new_user_token(ws, Role.member, name="mia")
    async with httpx.AsyncClient(base_url=srv.url, timeout=30) as http:
        # No credential, or one that is none: 401 pointing at the metadata, before anything is served.
        for auth in ({}, {"authorization": "Bearer not-a-credential"}, {"authorization": "Basic eDp5"}):
            r = await http.post("/mcp", json=call(2, "server.info", {}), headers={**JSON_AND_SSE, **auth})
            assert r.status_code == 401 and 'resource_metadata="' in r.headers["www-authenticate"]
        assert door.hot_calls == 0
        # A role short of the op, and an owner's op: refused as tool errors with the socket's codes.
        head = await open_session(http, mia)
        demoted = call(3, "spaces.create", {"workspace_id": ws, "title": "Plan"})
        assert (await http.post("/mcp", json=demoted, headers=head)).json()["result"]["isError"] is False
        owner_only = (await http.post("/mcp", json=call(4, "server.users", {}), headers=head)).json()["result"]
        assert owner_only["structuredContent"]["error"]["code"] == "forbidden"
        # The role is read on every call: made a guest over the socket, the next call is refused.
        identity = srv.ctx.service(IdentityService)
        mia_id = (await identity.authenticate(mia)).user_id
        async with RpcClient(srv.ws_url, srv.owner_token) as owner:
            await owner.call("members.setRole", workspace_id=ws, user_id=mia_id, role="guest")
        refused = (await http.post("/mcp", json={**demoted, "id": 5}, headers=head)).json()["result"]
        assert refused["isError"] is True and refused["structuredContent"]["error"]["code"] == "forbidden"
        assert refused["content"][0]["text"].startswith("forbidden: spaces.create needs the member role")
        reads = (await http.post("/mcp", json=call(6, "spaces.list", {"workspace_id": ws}), headers=head)).json()
        assert reads["result"]["isError"] is False
        # A guest calling an owner's op, and a workspace owner's op: refused alike.
        for n, name in enumerate(("server.users", "guardrails.set")):
            owned = call(60 + n, name, {"workspace_id": ws, "readOnly": True} if name == "guardrails.set" else {})
            refusal = (await http.post("/mcp", json=owned, headers=head)).json()["result"]
            assert refusal["structuredContent"]["error"]["code"] == "forbidden", refusal
        assert door.hot_calls == 6
        # Another credential with this session id, an unknown session, an ended one: the SDK's 404, nothing run.
        other = await srv.new_user_token(name="eve")
        stolen = await http.post(
            "/mcp", json=call(7, "server.info", {}), headers={**head, "authorization": f"Bearer {other}"}
        )
        assert stolen.status_code == 404
        unknown = await http.post("/mcp", json=call(8, "server.info", {}), headers={**head, "mcp-session-id": "f" * 32})
        assert unknown.status_code == 404
        spare = await open_session(http, mia)
        assert (await http.delete("/mcp", headers=spare)).status_code == 200
        ended = await http.post("/mcp", json=call(9, "server.info", {}), headers=spare)
        assert ended.status_code == 404
        assert door.hot_calls == 6
        # The credential revoked mid-session (over the socket, by a second credential of the same person): the
        # very next call is refused at the gate, without a pause, as sessionless ones are.
        second = await identity.issue_device(mia_id, "mia-laptop")
        async with RpcClient(srv.ws_url, second) as laptop:
            devices = await laptop.call("devices.list")
            first = next(d["id"] for d in devices if d["name"] == "mia-device")
            await laptop.call("devices.revoke", device_id=first)
        revoked = await http.post("/mcp", json=call(10, "server.info", {}), headers=head)
        assert revoked.status_code == 401 and "invalid_token" in revoked.headers["www-authenticate"]
        sessionless = {**JSON_AND_SSE, "authorization": f"Bearer {mia}"}
        assert (await http.post("/mcp", json=call(11, "server.info", {}), headers=sessionless)).status_code == 401
        assert door.hot_calls == 6


async def test_the_official_client_is_answered_by_the_hot_path(srv: RunningServer) -> None:
    """The SDK's own client, end to end: its plain calls are the hot path's (plain JSON answers), its calls asking
    for progress the SDK's, and it reads both alike."""
    door = await door_of(srv)
    ws = await srv.new_workspace()
    async with mcp_session(srv, srv.owner_token) as session:
        created = payload(await session.call_tool("spaces.create", {"workspace_id": ws, "title": "Plan"}))
        listed = payload(await session.call_tool("spaces.list", {"workspace_id": ws}))
        assert [s["id"] for s in listed["spaces"]] == [created["id"]]
        assert door.hot_calls == 2
        noted: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            noted.append(progress)

        streamed = await session.call_tool("server.info", {}, progress_callback=on_progress)
        assert payload(streamed)["name"] == "Hangar" and door.hot_calls == 2
