"""Guardrails and roles: read-only mode can be left, the last owner stays under concurrent demotion, who may
create workspaces is a server setting, and an invite admits no more than its minter may grant at redemption."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tests.support.processes import hangar_serve, owner_token
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import running_server


async def test_admins_take_a_workspace_out_of_read_only_mode(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        ws = await srv.new_workspace("ro")
        await c.call("guardrails.set", workspace_id=ws, readOnly=True)
        with pytest.raises(RpcError) as refused:
            await c.call("spaces.create", workspace_id=ws, title="nope")
        assert refused.value.code == "refused" and "read-only" in refused.value.message
        assert await c.call("guardrails.set", workspace_id=ws, readOnly=False) == {"readOnly": False, "askFirst": []}
        await c.call("spaces.create", workspace_id=ws, title="works again")
        member = await srv.new_user_token(ws, "member", name="m")
        await c.call("guardrails.set", workspace_id=ws, readOnly=True)
        async with RpcClient(srv.ws_url, member) as m:
            with pytest.raises(RpcError) as err:
                await m.call("guardrails.set", workspace_id=ws, readOnly=False)
            assert err.value.code == "forbidden"  # still an admin's decision


async def test_two_owners_demoting_themselves_at_once_through_two_servers_leave_one_owner(tmp_path: Path) -> None:
    data = tmp_path / "data"
    token = owner_token(data)
    with hangar_serve(data) as a, hangar_serve(data) as b:
        async with RpcClient(a.ws_url, token) as ca:
            for trial in range(10):
                ws = (await ca.call("workspaces.create", name=f"t{trial}"))["id"]
                code = (await ca.call("members.invite", workspace_id=ws, role="owner"))["code"]
                paired = httpx.post(f"{a.url}/auth/pair", json={"code": code, "deviceName": "o2"}).json()
                me = (await ca.call("users.me"))["id"]
                async with RpcClient(a.ws_url, token) as one, RpcClient(b.ws_url, paired["token"]) as two:
                    results = await asyncio.gather(
                        one.call("members.setRole", workspace_id=ws, user_id=me, role="admin"),
                        two.call("members.setRole", workspace_id=ws, user_id=paired["userId"], role="admin"),
                        return_exceptions=True,
                    )
                refused = [r for r in results if isinstance(r, RpcError)]
                assert len(refused) == 1 and refused[0].code == "conflict", results
                members = await ca.call("members.list", workspace_id=ws)
                rows = members["members"] if isinstance(members, dict) else members
                assert [m["role"] for m in rows].count("owner") == 1


async def test_who_may_create_workspaces_is_a_server_setting(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, RpcClient(srv.ws_url, srv.owner_token) as owner:
        ws = await srv.new_workspace("home")
        guest = await srv.new_user_token(ws, "guest", name="g")
        member = await srv.new_user_token(ws, "member", name="m")
        nobody = await srv.new_user_token(None, name="n")
        async with (
            RpcClient(srv.ws_url, guest) as g,
            RpcClient(srv.ws_url, member) as m,
            RpcClient(srv.ws_url, nobody) as n,
        ):
            for client in (g, n):  # the default: the server owner and members of a workspace
                with pytest.raises(RpcError) as err:
                    await client.call("workspaces.create", name="mine")
                assert err.value.code == "forbidden" and "workspaceCreators" in err.value.message
            await m.call("workspaces.create", name="a member's")
            await owner.call("server.setWorkspaceCreators", who="serverOwner")
            with pytest.raises(RpcError):
                await m.call("workspaces.create", name="not any more")
            await owner.call("workspaces.create", name="the owner's")
            await owner.call("server.setWorkspaceCreators", who="anyone")
            await n.call("workspaces.create", name="anyone's")
            with pytest.raises(RpcError) as bad:
                await owner.call("server.setWorkspaceCreators", who="everybody")
            assert bad.value.code == "invalid_args"
            with pytest.raises(RpcError) as not_owner:
                await m.call("server.setWorkspaceCreators", who="anyone")
            assert not_owner.value.code == "forbidden"


async def test_an_invite_from_a_since_demoted_admin_admits_nobody_as_admin(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path) as srv,
        RpcClient(srv.ws_url, srv.owner_token) as owner,
        httpx.AsyncClient() as http,
    ):
        ws = await srv.new_workspace("inv")
        admin_token = await srv.new_user_token(ws, "admin", name="ada")
        async with RpcClient(srv.ws_url, admin_token) as ada:
            admin_id = (await ada.call("users.me"))["id"]
            code = (await ada.call("members.invite", workspace_id=ws, role="admin"))["code"]
            member_code = (await ada.call("members.invite", workspace_id=ws, role="member"))["code"]
        await owner.call("members.setRole", workspace_id=ws, user_id=admin_id, role="member")
        refused = await http.post(f"{srv.url}/auth/pair", json={"code": code, "deviceName": "eve"})
        assert refused.status_code == 403 or refused.json()["error"]["code"] == "refused", refused.text
        assert "can no longer admit" in refused.text
        also = await http.post(f"{srv.url}/auth/pair", json={"code": member_code, "deviceName": "eve"})
        assert also.status_code >= 400  # a demoted admin admits nobody through earlier codes
        members = await owner.call("members.list", workspace_id=ws)
        rows = members["members"] if isinstance(members, dict) else members
        assert len(rows) == 2
