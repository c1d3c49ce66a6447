"""Credentials narrower than their holder: one workspace, reads only, named ops, a deadline, an agent's voice.

An OAuth client the person consented for and an agent's short-lived credential are both such credentials; the
dispatcher holds every call to what was granted, whichever door it came through.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from hangar.core.clock import FakeClock
from hangar.errors import InvalidArgs
from hangar.identity import IdentityService
from hangar.identity.models import DeviceScope
from tests.integration.core_parts import PARTS
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import running_server


async def _refused(client: RpcClient, op: str, **args: object) -> RpcError:
    with pytest.raises(RpcError) as info:
        await client.call(op, **args)
    return info.value


async def test_a_credential_limited_to_one_workspace_and_to_reads(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=PARTS) as srv:
        a, b = await srv.new_workspace("a"), await srv.new_workspace("b")
        identity = srv.ctx.service(IdentityService)
        scope = DeviceScope(workspace_id=a, read_only=True, client_id="client-1")
        narrow = await identity.issue_device(srv.owner_id, "Some MCP client", scope=scope)
        async with RpcClient(srv.ws_url, narrow) as c:
            assert [m["role"] for m in await c.call("members.list", workspace_id=a)] == ["owner"]
            other = await _refused(c, "members.list", workspace_id=b)
            assert other.code == "forbidden" and f"limited to workspace {a}" in other.message
            change = await _refused(c, "members.invite", workspace_id=a, role="member")
            assert change.code == "forbidden" and "read-only" in change.message
            assert [w["id"] for w in await c.call("workspaces.list")] == [a]
            me = await c.call("users.me")
            assert [w["id"] for w in me["workspaces"]] == [a] and me["isServerOwner"] is False
            server_wide = await _refused(c, "workspaces.create", name="c")
            assert server_wide.code == "forbidden" and "server-wide changes" in server_wide.message
            owner_only = await _refused(c, "server.users")
            assert owner_only.code == "forbidden" and "server owner" in owner_only.message
        async with RpcClient(srv.ws_url, srv.owner_token) as full:
            listed = {d["name"]: d for d in await full.call("devices.list")}
            shown = listed["Some MCP client"]
            assert shown["workspaceId"] == a and shown["readOnly"] is True and shown["expiresAt"] is None
            assert (await full.call("members.invite", workspace_id=a, role="member"))["code"]


async def test_a_credential_with_a_deadline_stops_at_it(tmp_path: Path) -> None:
    clock = FakeClock()
    async with running_server(tmp_path, parts=PARTS, clock=clock) as srv, httpx.AsyncClient() as http:
        identity = srv.ctx.service(IdentityService)
        scope = DeviceScope(expires_at=clock.now() + timedelta(minutes=5))
        token = await identity.issue_device(srv.owner_id, "brief", scope=scope)
        headers = {"Authorization": f"Bearer {token}"}
        assert (await http.get(f"{srv.url}/auth/me", headers=headers)).status_code == 200
        clock.advance(5 * 60)
        r = await http.get(f"{srv.url}/auth/me", headers=headers)
        assert r.status_code == 401 and "expired" in r.json()["error"]["message"]


async def test_an_agents_credential_speaks_for_the_agent_within_its_tools(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=PARTS) as srv:
        a, b = await srv.new_workspace("a"), await srv.new_workspace("b")
        identity = srv.ctx.service(IdentityService)
        agent_id = "4f6c1f2e-0000-4000-8000-00000000a9e1"
        scope = DeviceScope(workspace_id=a, agent_id=agent_id, tools=frozenset({"members.list", "test.spawn"}))
        token = await identity.issue_device(srv.owner_id, "agent run", scope=scope)
        async with RpcClient(srv.ws_url, token) as c:
            assert len(await c.call("members.list", workspace_id=a)) == 1
            assert (await _refused(c, "members.list", workspace_id=b)).code == "forbidden"
            not_granted = await _refused(c, "members.invite", workspace_id=a, role="guest")
            assert "not among the tools" in not_granted.message
            assert (await c.call("test.spawn", workspace_id=a, command="x"))["ran"] == "x"
        who = await identity.authenticate(token)
        assert who.label == f"agent:{agent_id}" and who.user_id == f"agent:{agent_id}" and not who.is_server_owner
        with pytest.raises(InvalidArgs, match=r"limited to the agent's workspace"):
            await identity.issue_device(srv.owner_id, "loose", scope=DeviceScope(agent_id=agent_id))


async def test_a_credential_limited_to_one_space(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=PARTS) as srv:
        a = await srv.new_workspace("a")
        identity = srv.ctx.service(IdentityService)
        agent_id = "4f6c1f2e-0000-4000-8000-00000000a9e2"
        tools = frozenset({"members.list", "test.spawn", "events.list"})
        scope = DeviceScope(workspace_id=a, space_id="space-own", agent_id=agent_id, tools=tools)
        token = await identity.issue_device(srv.owner_id, "agent run in a space", scope=scope)
        async with RpcClient(srv.ws_url, token) as c:
            assert (await c.call("test.spawn", workspace_id=a, space_id="space-own", command="x"))["ran"] == "x"
            # Either spelling of the argument names the space.
            elsewhere = await _refused(c, "test.spawn", workspace_id=a, spaceId="space-other", command="x")
            assert elsewhere.code == "forbidden"
            assert elsewhere.message == (
                "this credential is limited to space space-own; test.spawn names space space-other"
            )
            assert (await c.call("test.spawn", workspace_id=a, command="y"))["ran"] == "y"  # names no space
            assert len(await c.call("members.list", workspace_id=a)) == 1  # not about spaces
            every = await _refused(c, "events.list", workspace_id=a)
            assert every.message == (
                "this credential is limited to space space-own; events.list reads every space of the workspace"
            )
        assert (await identity.authenticate(token)).space_id == "space-own"
        # A person's devices list shows the limit (an agent's credentials are not listed among them).
        await identity.issue_device(srv.owner_id, "one space", scope=DeviceScope(workspace_id=a, space_id="space-own"))
        async with RpcClient(srv.ws_url, srv.owner_token) as full:
            listed = {d["name"]: d for d in await full.call("devices.list")}
            assert listed["one space"]["spaceId"] == "space-own" and listed["one space"]["workspaceId"] == a
            assert all(d["spaceId"] is None for n, d in listed.items() if n != "one space")
            # The person's own credential reaches every space.
            assert (await full.call("test.spawn", workspace_id=a, space_id="space-other", command="z"))["ran"] == "z"
        with pytest.raises(InvalidArgs, match=r"limited to a space is limited to its workspace"):
            await identity.issue_device(srv.owner_id, "loose", scope=DeviceScope(space_id="space-own"))


async def test_an_applications_credential_cannot_mint_or_end_the_persons_other_credentials(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=PARTS) as srv:
        identity = srv.ctx.service(IdentityService)
        # The widest grant an OAuth client can get: every workspace, read and change.
        wide = await identity.issue_device(srv.owner_id, "Wide client (OAuth)", scope=DeviceScope(client_id="c"))
        read_only = await identity.issue_device(srv.owner_id, "Reader (OAuth)", scope=DeviceScope(read_only=True))
        async with RpcClient(srv.ws_url, srv.owner_token) as own:
            mine = next(d for d in await own.call("devices.list") if d["current"])
        async with RpcClient(srv.ws_url, wide) as c:
            minted = await _refused(c, "devices.pairingCode")
            assert minted.code == "forbidden" and "your own device" in minted.message
            other = await _refused(c, "devices.revoke", device_id=mine["id"])
            assert other.code == "forbidden" and "only itself" in other.message
            me = await c.call("users.me")
            await c.call("devices.revoke", device_id=me["deviceId"])  # signing out is its own to do
        async with RpcClient(srv.ws_url, read_only) as r:
            assert (await r.call("users.me"))["isServerOwner"] is False  # owner reads act on the network
            assert (await _refused(r, "server.users")).code == "forbidden"
        async with RpcClient(srv.ws_url, srv.owner_token) as own:
            assert (await own.call("devices.pairingCode"))["code"]
