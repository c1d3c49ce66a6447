"""The RPC socket end to end: real server on a loopback port, real WebSocket clients."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

import hangar
from tests.integration.core_parts import PARTS
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server


@pytest.fixture
async def srv(tmp_path: Path):
    async with running_server(tmp_path / "data", parts=PARTS) as s:
        yield s


async def expect(code: str, coro) -> RpcError:
    with pytest.raises(RpcError) as info:
        await coro
    assert info.value.code == code, info.value
    return info.value


async def test_healthz(srv: RunningServer) -> None:
    async with httpx.AsyncClient() as http:
        r = await http.get(f"{srv.url}/healthz")
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "version": hangar.__version__}


async def test_auth_by_header_and_by_first_frame(srv: RunningServer) -> None:
    async with RpcClient(srv.ws_url, srv.owner_token) as c:
        me = await c.call("users.me")
        assert me["isServerOwner"] is True
    async with RpcClient(srv.ws_url, srv.owner_token, frame_auth=True) as c:
        ack = await asyncio.wait_for(c.unsolicited.get(), 5)
        assert ack["type"] == "auth" and ack["ok"] is True
        assert (await c.call("server.info"))["version"] == hangar.__version__


async def test_bad_credentials_are_unauthenticated(srv: RunningServer) -> None:
    async with RpcClient(srv.ws_url, "hgr_not-a-real-token") as c:
        frame = await asyncio.wait_for(c.unsolicited.get(), 5)
        assert frame["error"]["code"] == "unauthenticated"
        await asyncio.sleep(0.1)
        assert c.close_code == 4401
    async with RpcClient(srv.ws_url, None) as c:
        await c.send_raw(json.dumps({"type": "hello"}))
        frame = await asyncio.wait_for(c.unsolicited.get(), 5)
        assert frame["error"]["code"] == "unauthenticated"


async def test_frame_errors_name_the_problem(srv: RunningServer) -> None:
    async with RpcClient(srv.ws_url, srv.owner_token) as c:
        await c.send_raw("{not json")
        frame = await asyncio.wait_for(c.unsolicited.get(), 5)
        assert frame == {"id": None, "ok": False, "error": frame["error"]}
        assert frame["error"]["code"] == "invalid_args" and "JSON" in frame["error"]["message"]
        await c.send_raw(json.dumps([1, 2]))
        frame = await asyncio.wait_for(c.unsolicited.get(), 5)
        assert frame["error"]["code"] == "invalid_args"
        reply = await c.request("", {})
        assert reply["error"]["code"] == "unknown_op"
        await expect("unknown_op", c.call("no.suchOp"))
        err = await expect("invalid_args", c.call("workspaces.create", name=5))
        assert "name" in err.message
        err = await expect("invalid_args", c.call("workspaces.create"))
        assert "args.name is required" in err.message
        err = await expect("invalid_args", c.call("workspaces.create", name="x", colour="red"))
        assert "colour" in err.message
        reply = await c.request("server.info", {"x": 1})
        assert reply["error"]["code"] == "invalid_args"
        # The socket still serves after all of that.
        assert (await c.call("server.info"))["name"] == "Hangar"


async def test_workspace_required_before_any_database(srv: RunningServer) -> None:
    async with RpcClient(srv.ws_url, srv.owner_token) as c:
        err = await expect("workspace_required", c.call("members.list"))
        assert "workspace_id" in err.message
        # A workspace id that does not exist never creates a database file.
        await expect("forbidden", c.call("members.list", workspace_id="nope"))
        assert not (srv.data_dir / "nope").exists()


@pytest.mark.sqlite_only("checks that a workspace.db file is made")
async def test_roles_and_workspaces(srv: RunningServer) -> None:
    async with RpcClient(srv.ws_url, srv.owner_token) as owner:
        ws = await owner.call("workspaces.create", name="Acme")
        assert set(ws) == {"id", "name"}
        wid = ws["id"]
        assert (srv.data_dir / wid / "workspace.db").exists()
        assert [w["role"] for w in await owner.call("workspaces.list")] == ["owner"]
        guest_token = await srv.new_user_token(wid, "guest", name="gus")
        admin_token = await srv.new_user_token(wid, "admin", name="ada")
        outsider = await srv.new_user_token(None, name="out")
        async with RpcClient(srv.ws_url, guest_token) as guest:
            assert len(await guest.call("members.list", workspace_id=wid)) == 3
            err = await expect("forbidden", guest.call("members.invite", workspace_id=wid, role="member"))
            assert "admin" in err.message
        async with RpcClient(srv.ws_url, outsider) as out:
            await expect("forbidden", out.call("members.list", workspace_id=wid))
        async with RpcClient(srv.ws_url, admin_token) as admin:
            await expect("forbidden", admin.call("members.invite", workspace_id=wid, role="owner"))
            code = (await admin.call("members.invite", workspace_id=wid, role="member"))["code"]
            assert len(code) == 10
            await expect("invalid_args", admin.call("members.invite", workspace_id=wid, role="king"))
        members = await owner.call("members.list", workspace_id=wid)
        gus = next(m for m in members if m["displayName"] == "gus")
        await owner.call("members.setRole", workspace_id=wid, user_id=gus["userId"], role="member")
        await expect("not_found", owner.call("members.setRole", workspace_id=wid, user_id="nobody", role="member"))
        await expect("conflict", owner.call("members.setRole", workspace_id=wid, user_id=srv.owner_id, role="admin"))
        await owner.call("members.remove", workspace_id=wid, user_id=gus["userId"])
        assert len(await owner.call("members.list", workspace_id=wid)) == 2
        types = [e["type"] for e in await owner.call("events.list", workspace_id=wid)]
        assert types == ["identity.workspaceCreated", "identity.memberRoleChanged", "identity.memberRemoved"]
        entries = await owner.call("audit.list", workspace_id=wid)
        assert [e["action"] for e in entries][:2] == ["workspaces.create", "members.invite"]


async def test_server_owner_ops_refuse_a_workspace_owner(srv: RunningServer) -> None:
    home = await srv.new_workspace("home")
    user_token = await srv.new_user_token(home, "member", name="wsowner")
    async with RpcClient(srv.ws_url, user_token) as c:
        await c.call("workspaces.create", name="Mine")  # a member of a workspace may create one
        err = await expect("forbidden", c.call("server.users"))
        assert "server owner" in err.message
    async with RpcClient(srv.ws_url, srv.owner_token) as c:
        assert len(await c.call("server.users")) == 2


async def test_other_error_codes(srv: RunningServer) -> None:
    async with RpcClient(srv.ws_url, srv.owner_token) as c:
        await expect("unavailable", c.call("test.down"))
        err = await expect("internal", c.call("test.crash"))
        assert "secret-value-123" not in err.message


async def test_guardrails_read_only_and_ask_first(srv: RunningServer) -> None:
    async with RpcClient(srv.ws_url, srv.owner_token) as c:
        wid = (await c.call("workspaces.create", name="G"))["id"]
        assert (await c.call("test.spawn", workspace_id=wid, command="ls"))["ran"] == "ls"
        await c.call("guardrails.set", workspace_id=wid, space_id="s1", askFirst=["processSpawn"])
        err = await expect("refused", c.call("test.spawn", workspace_id=wid, space_id="s1", command="ls"))
        assert "processSpawn" in err.message and "asks first" in err.message
        # Other spaces keep the default.
        await c.call("test.spawn", workspace_id=wid, space_id="s2", command="ls")
        await expect("invalid_args", c.call("guardrails.set", workspace_id=wid, askFirst=["flying"]))
        await c.call("guardrails.set", workspace_id=wid, readOnly=True)
        err = await expect("refused", c.call("test.spawn", workspace_id=wid, command="ls"))
        assert "read-only" in err.message
        await expect("refused", c.call("members.invite", workspace_id=wid, role="member"))
        # Reads still work in read-only mode.
        await c.call("members.list", workspace_id=wid)


async def test_arguments_take_either_spelling(srv: RunningServer) -> None:
    async with RpcClient(srv.ws_url, srv.owner_token) as c:
        wid = (await c.call("workspaces.create", name="S"))["id"]
        await c.call("guardrails.set", workspace_id=wid, spaceId="s1", ask_first=["processSpawn"])
        assert (await c.call("guardrails.get", workspace_id=wid, space_id="s1"))["askFirst"] == ["processSpawn"]
        # The space's guardrail applies whichever way the caller spells the space.
        for spelling in ("space_id", "spaceId"):
            err = await expect("refused", c.call("test.spawn", workspace_id=wid, command="ls", **{spelling: "s1"}))
            assert "asks first" in err.message
        err = await expect("invalid_args", c.call("test.spawn", workspace_id=wid, command="ls", space_id=5))
        assert err.message.startswith("args.space_id:")
        err = await expect("invalid_args", c.call("test.spawn", workspace_id=wid, command="ls", spaceId=5))
        assert err.message.startswith("args.spaceId:")
        err = await expect(
            "invalid_args", c.call("test.spawn", workspace_id=wid, command="ls", space_id="a", spaceId="b")
        )
        assert "spelled twice" in err.message


async def test_oversize_frame_closes_1009_and_others_keep_going(srv: RunningServer) -> None:
    async with RpcClient(srv.ws_url, srv.owner_token) as bystander, RpcClient(srv.ws_url, srv.owner_token) as c:
        ok_size = json.dumps({"id": 1, "op": "server.info", "args": {"pad": "x" * 1000}})
        await c.send_raw(ok_size)
        await asyncio.sleep(0.05)
        await c.send_raw(json.dumps({"id": 2, "op": "server.info", "args": {"pad": "x" * (256 * 1024)}}))
        for _ in range(100):
            if c.close_code is not None:
                break
            await asyncio.sleep(0.05)
        assert c.close_code == 1009
        assert (await bystander.call("server.info"))["name"] == "Hangar"


async def test_watch_and_unwatch(srv: RunningServer) -> None:
    from tests.integration.core_parts import Pinged

    async with RpcClient(srv.ws_url, srv.owner_token) as c:
        wid = (await c.call("workspaces.create", name="W"))["id"]
        watch = await c.watch("events.watch", workspace_id=wid, types=["test.pinged"])
        assert watch.result == {"watching": wid}
        await srv.ctx.bus.publish(Pinged(workspace_id=wid, n=1))
        ev = await watch.next()
        assert ev["type"] == "test.pinged" and ev["payload"] == {"n": 1} and ev["seq"] >= 1
        assert (await watch.close()) == {"watchId": watch.id}
        await expect("not_found", c.call("unwatch", watchId=watch.id))
        await srv.ctx.bus.publish(Pinged(workspace_id=wid, n=2))
        await asyncio.sleep(0.1)
        assert watch._queue.empty()
