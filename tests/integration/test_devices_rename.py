"""A device named at pairing can be renamed by the person it belongs to (two devices both called "owner-token" were
told apart by nothing): ``devices.rename`` over the real socket, the name's limits on both sides, the refusals,
the name given at pairing and by ``hangar admin owner-token --name``."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from hangar.identity import DeviceScope, IdentityService
from hangar.identity.devices import MAX_DEVICE_NAME
from tests.integration.core_parts import PARTS
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import running_server

HANGAR = str(Path(sys.executable).parent / "hangar")


async def refused(client: RpcClient, device_id: str, name: str) -> RpcError:
    with pytest.raises(RpcError) as info:
        await client.call("devices.rename", deviceId=device_id, name=name)
    return info.value


async def test_a_member_renames_their_own_device_and_no_one_elses(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with running_server(tmp_path, parts=PARTS) as srv:
        ws = await srv.new_workspace("w")
        meg = await srv.new_user_token(ws, "member", name="meg")
        async with RpcClient(srv.ws_url, srv.owner_token) as owner:
            (owners,) = await owner.call("devices.list")
        async with RpcClient(srv.ws_url, meg) as m:
            (mine,) = await m.call("devices.list")
            with caplog.at_level(logging.INFO, logger="hangar.identity.ops"):
                renamed = await m.call("devices.rename", deviceId=mine["id"], name="  Meg's laptop  ")
            assert renamed["name"] == "Meg's laptop" and renamed["current"] is True and renamed["id"] == mine["id"]
            assert [d["name"] for d in await m.call("devices.list")] == ["Meg's laptop"]
            # The record of the change: devices are the server's, so its log says who renamed what.
            assert f"device {mine['id']} renamed from 'meg-device' to \"Meg's laptop\" by user:" in caplog.text

            # Another person's device (the server owner's here) is not one of hers: refused, and left as it was.
            other = await refused(m, owners["id"], "mine now")
            assert other.code == "not_found" and "is not an active device of yours" in other.message
            assert other.message.startswith("deviceId: ")

            # The limit on both sides: at it accepted, one past refused; empty and control characters refused.
            at_limit = "n" * MAX_DEVICE_NAME
            assert (await m.call("devices.rename", deviceId=mine["id"], name=at_limit))["name"] == at_limit
            long = await refused(m, mine["id"], "n" * (MAX_DEVICE_NAME + 1))
            assert long.code == "invalid_args"
            assert long.message == f"a device name is at most {MAX_DEVICE_NAME} characters; this one has 101"
            assert (await refused(m, mine["id"], "   ")).message == "a device name cannot be empty"
            assert "control characters" in (await refused(m, mine["id"], "two\nlines")).message
            assert [d["name"] for d in await m.call("devices.list")] == [at_limit]
        async with RpcClient(srv.ws_url, srv.owner_token) as owner:
            assert [d["name"] for d in await owner.call("devices.list")] == [owners["name"]]


async def test_a_revoked_device_cannot_be_renamed_nor_can_an_application_rename_any(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=PARTS) as srv:
        identity = srv.ctx.service(IdentityService)
        app_token = await identity.issue_device(srv.owner_id, "Some MCP client", scope=DeviceScope(client_id="c-1"))
        old_token = await identity.issue_device(srv.owner_id, "old phone")
        async with RpcClient(srv.ws_url, srv.owner_token) as owner:
            listed = {d["name"]: d["id"] for d in await owner.call("devices.list")}
            await owner.call("devices.revoke", deviceId=listed["old phone"])
            gone = await refused(owner, listed["old phone"], "new name")
            assert gone.code == "not_found"
        assert old_token
        async with RpcClient(srv.ws_url, app_token) as app:
            other = await refused(app, listed["test-owner"], "renamed by an app")
            assert other.code == "forbidden" and "cannot rename credentials" in other.message
            # Not itself either: named "My laptop", it would hide among its person's devices.
            itself = await refused(app, listed["Some MCP client"], "My laptop")
            assert itself.code == "forbidden"
        async with RpcClient(srv.ws_url, srv.owner_token) as owner:
            names = {d["name"] for d in await owner.call("devices.list")}
            assert "Some MCP client" in names and "My laptop" not in names
            renamed = await owner.call("devices.rename", deviceId=listed["Some MCP client"], name="Editor plug-in")
            assert renamed["name"] == "Editor plug-in"


async def test_a_name_given_at_pairing_is_checked_before_the_code_is_spent(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=PARTS) as srv, httpx.AsyncClient() as http:
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            code = (await c.call("devices.pairingCode"))["code"]
        too_long = await http.post(
            f"{srv.url}/auth/pair", json={"code": code, "deviceName": "p" * (MAX_DEVICE_NAME + 1)}
        )
        assert too_long.status_code == 400
        assert too_long.json()["error"]["message"].startswith("deviceName: a device name is at most 100 characters")
        paired = await http.post(f"{srv.url}/auth/pair", json={"code": code, "deviceName": "p" * MAX_DEVICE_NAME})
        assert paired.status_code == 200, paired.text


def test_owner_token_takes_a_name(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [HANGAR, "admin", "owner-token", "--data-dir", str(tmp_path), *args]
        return subprocess.run(cmd, capture_output=True, text=True, check=False)

    named = run("--name", "build server")
    assert named.returncode == 0, named.stderr
    too_long = run("--name", "x" * (MAX_DEVICE_NAME + 1))
    assert too_long.returncode == 2 and "at most 100 characters" in too_long.stderr
    default = run()
    assert default.returncode == 0

    async def names() -> list[str]:
        from hangar.config import Settings
        from hangar.identity.part import IDENTITY_PART
        from hangar.server.context_factory import open_context

        async with open_context(Settings(data_dir=tmp_path), parts=[IDENTITY_PART]) as ctx:
            identity = ctx.service(IdentityService)
            owner = await identity.ensure_server_owner()
            return [d.name for d in await identity.list_devices(owner.id)]

    import asyncio

    assert asyncio.run(names()) == ["build server", "owner-token"]
