"""Granting hosts to one rig through the RPC socket: the rig's egress gate lets it reach a host only after
`rig.grantHosts`, which admins alone may call and which validates every pattern."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.integration.rigs_env import rigs_server
from tests.support.rpc import RpcClient, RpcError

pytestmark = pytest.mark.packs("terminal")

CURL = "curl -sS -m 10 http://later.test/; echo rc=$?"


async def test_grant_hosts_opens_the_gate_for_that_rig_only(tmp_path: Path) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        body = b"reached the granted host\n"
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = int(server.sockets[0].getsockname()[1])
    try:
        async with rigs_server(tmp_path, overrides={"later.test:80": ("127.0.0.1", port)}) as env:
            rig = await env.open()
            other = await env.open(await env.new_space("b"))
            before = (await env.exec(rig, CURL))["stdout"]
            assert "reached" not in before and "rc=0" not in before
            member = await env.srv.new_user_token(env.ws, "member", name="m")
            async with RpcClient(env.srv.ws_url, member) as m:
                with pytest.raises(RpcError) as e:
                    await m.call("rig.grantHosts", workspace_id=env.ws, rigId=rig, hosts=["later.test"])
                assert e.value.code == "forbidden"
            with pytest.raises(RpcError) as e:
                await env.call("rig.grantHosts", rigId=rig, hosts=["later.test", "not a host"])
            assert e.value.code == "invalid_args" and "not a host" in e.value.message
            with pytest.raises(RpcError) as e:
                await env.call("rig.grantHosts", rigId=rig, hosts=[])
            assert e.value.code == "invalid_args" and "hosts" in e.value.message
            assert await env.call("rig.grantHosts", rigId=rig, hosts=["later.test"]) == {
                "rigId": rig,
                "granted": ["later.test"],
            }
            assert (await env.exec(rig, CURL))["stdout"] == "reached the granted host\nrc=0\n"
            assert "reached" not in (await env.exec(other, CURL))["stdout"]  # other rigs keep their own list
            rows = await env.call("audit.list", target=f"rig:{rig}")
            assert any(r["action"] == "rig.grantHosts" and r["details"] == {"hosts": ["later.test"]} for r in rows)
    finally:
        server.close()
