"""Ports: a web server started inside a real rig is reached through its forwarded host port; the guest's own
port number is preferred; at most 16 are forwarded (the rest listed and logged); share-on-LAN on request."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.support.rpc import RpcError

pytestmark = pytest.mark.packs("terminal")


def free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


async def ports_when(env: RigsEnv, rig: str, ready: Any) -> list[dict[str, Any]]:
    for _ in range(200):  # the guest's listeners come up on their own time
        await env.manager.poll_ports()
        rows: list[dict[str, Any]] = (await env.call("rig.ports", rigId=rig))["ports"]
        if ready(rows):
            return rows
        await asyncio.sleep(0.05)
    raise AssertionError(f"ports never settled: {rows}")


async def test_a_web_server_in_the_rig_is_reached_through_its_forward(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        preferred_free = free(18080)
        await env.exec(
            rig, "echo hello-port > ~/index.html && cd ~ && setsid -f python3 -m http.server 18080 >/dev/null 2>&1"
        )
        rows = await ports_when(env, rig, lambda rows: any(r["guestPort"] == 18080 for r in rows))
        [row] = rows
        assert row["forwarded"] is True and row["lanPort"] is None
        if preferred_free:
            assert row["hostPort"] == 18080  # the guest's own port number, when the host has it free
        async with httpx.AsyncClient() as http:
            r = await http.get(f"http://127.0.0.1:{row['hostPort']}/index.html")
            assert r.text == "hello-port\n"
            shared = await env.call("rig.sharePort", rigId=rig, guestPort=18080)
            lan = shared["ports"][0]["lanPort"]
            assert isinstance(lan, int) and lan not in (0, row["hostPort"])
            assert (await http.get(f"http://127.0.0.1:{lan}/index.html")).text == "hello-port\n"
            unshared = await env.call("rig.sharePort", rigId=rig, guestPort=18080, share=False)
            assert unshared["ports"][0]["lanPort"] is None
            with pytest.raises(httpx.ConnectError):
                await http.get(f"http://127.0.0.1:{lan}/index.html")
        with pytest.raises(RpcError) as e:
            await env.call("rig.sharePort", rigId=rig, guestPort=9)
        assert e.value.code == "invalid_args" and "not forwarded" in e.value.message
        await env.exec(rig, "pkill -f 'http.server 18080'")
        assert await ports_when(env, rig, lambda rows: rows == []) == []
        with pytest.raises(httpx.ConnectError):
            async with httpx.AsyncClient() as http:
                await http.get(f"http://127.0.0.1:{row['hostPort']}/")


LISTEN_17 = (
    'setsid -f python3 -c "import socket, time\n'
    "socks = []\n"
    "for p in range(19001, 19018):\n"
    "    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "    s.bind(('0.0.0.0', p)); s.listen(); socks.append(s)\n"
    'time.sleep(600)" >/dev/null 2>&1'
)


async def test_at_most_16_ports_are_forwarded_and_a_taken_host_port_falls_back(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        # A host port someone already holds, below the others so it is among the 16 forwarded.
        taken = next(p for p in range(18990, 19000) if free(p))
        squatter = socket.socket()
        squatter.bind(("127.0.0.1", taken))
        try:
            # A listener on a guest port equal to a host port someone already holds, then 17 more.
            await env.exec(rig, f"setsid -f python3 -m http.server {taken} >/dev/null 2>&1")
            await ports_when(env, rig, lambda rows: len(rows) == 1)
            await env.exec(rig, LISTEN_17)
            rows = await ports_when(env, rig, lambda rows: len(rows) == 18)
        finally:
            squatter.close()
        forwarded = [r for r in rows if r["forwarded"]]
        extra = [r["guestPort"] for r in rows if not r["forwarded"]]
        assert len(forwarded) == 16 and len(extra) == 2
        assert sorted([r["guestPort"] for r in forwarded] + extra) == sorted([*range(19001, 19018), taken])
        assert extra == [19016, 19017]
        fell_back = next(r for r in forwarded if r["guestPort"] == taken)
        assert fell_back["hostPort"] != taken  # taken on the host: an OS-assigned port instead
        log = [e for e in await env.manager.store.actions(env.ws, rig) if e.verb == "portsNotForwarded"]
        assert sorted(p for e in log for p in e.details["guestPorts"]) == sorted(extra)
        # Polling again logs nothing new: each port is logged once while it stays unforwarded.
        await env.manager.poll_ports()
        again = [e for e in await env.manager.store.actions(env.ws, rig) if e.verb == "portsNotForwarded"]
        assert len(again) == len(log)
