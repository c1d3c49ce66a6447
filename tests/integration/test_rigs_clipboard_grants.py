"""Clipboard grants are each person's: over the real socket of a real server, a member can neither revoke another
person's grants nor list everyone's (both refused, and nothing changed), while the server owner may do both."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hangar.core.principal import Role
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with running_server(tmp_path / "data") as s:
        yield s


async def people(srv: RunningServer) -> tuple[str, str, str]:
    """A workspace member's credential, their id, and the id of another member (Olga, who is no server owner)."""
    ws = await srv.new_workspace()
    mallory = await srv.new_user_token(ws, Role.member, name="mallory")
    olga = await srv.new_user_token(ws, Role.member, name="olga")
    async with RpcClient(srv.ws_url, mallory) as m, RpcClient(srv.ws_url, olga) as o:
        mallory_id, olga_id = (await m.call("users.me"))["id"], (await o.call("users.me"))["id"]
        await o.call("rig.clipboardGrant", direction="rigToHost", always=True)
    return mallory, mallory_id, olga_id


async def test_only_the_server_owner_revokes_another_persons_grants(srv: RunningServer) -> None:
    mallory, mallory_id, olga_id = await people(srv)
    async with RpcClient(srv.ws_url, mallory) as m, RpcClient(srv.ws_url, srv.owner_token) as owner:
        await owner.call("rig.clipboardGrant", direction="rigToHost", always=True)
        for victim in (olga_id, srv.owner_id):
            with pytest.raises(RpcError) as refused:
                await m.call("rig.clipboardRevoke", direction="rigToHost", user_id=victim)
            assert refused.value.code == "forbidden"
            assert "only the server owner revokes another person's clipboard grants" in refused.value.message
        everyone = (await owner.call("rig.clipboardGrants", everyone=True))["grants"]
        assert {(g["userId"], g["always"]) for g in everyone} == {(olga_id, True), (srv.owner_id, True)}
        # Her own are hers to revoke; the server owner revokes anyone's.
        await m.call("rig.clipboardGrant", direction="rigToHost", minutes=10)
        await m.call("rig.clipboardRevoke", direction="rigToHost", user_id=mallory_id)
        assert (await m.call("rig.clipboardGrants"))["grants"] == []
        await owner.call("rig.clipboardRevoke", direction="rigToHost", user_id=olga_id)
        left = (await owner.call("rig.clipboardGrants", everyone=True))["grants"]
        assert [g["userId"] for g in left] == [srv.owner_id]


async def test_only_the_server_owner_lists_everyones_grants(srv: RunningServer) -> None:
    mallory, _mallory_id, olga_id = await people(srv)
    async with RpcClient(srv.ws_url, mallory) as m, RpcClient(srv.ws_url, srv.owner_token) as owner:
        with pytest.raises(RpcError) as refused:
            await m.call("rig.clipboardGrants", everyone=True)
        assert refused.value.code == "forbidden" and "everyone's clipboard grants" in refused.value.message
        assert (await m.call("rig.clipboardGrants"))["grants"] == []  # her own: none
        assert [g["userId"] for g in (await owner.call("rig.clipboardGrants", everyone=True))["grants"]] == [olga_id]
