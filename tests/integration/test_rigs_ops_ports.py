"""Ports: a web server started inside a real rig is reached through its forwarded host port, on the rig's own
loopback address (never 127.0.0.1, whose ports belong to the host's services); the guest's own port number is
preferred there, except a port the server's configuration names; at most 16 are forwarded (the rest listed and
logged); share-on-LAN on request."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest

from hangar.rigs.loopback import is_rig_address
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.support.ports import free_port, is_free
from tests.support.rpc import RpcError

pytestmark = pytest.mark.packs("terminal")


SERVE = (
    "mkdir -p ~/{tag} && echo {tag} > ~/{tag}/index.html && cd ~/{tag} && "
    "setsid -f python3 -m http.server {port} >/dev/null 2>&1"
)


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
        preferred_free = is_free(18080)
        await env.exec(rig, SERVE.format(tag="hello-port", port=18080))
        rows = await ports_when(env, rig, lambda rows: any(r["guestPort"] == 18080 for r in rows))
        [row] = rows
        assert row["forwarded"] is True and row["lanPort"] is None
        address = row["hostAddress"]
        assert is_rig_address(address) and address != "127.0.0.1"
        if preferred_free:
            assert row["hostPort"] == 18080  # the guest's own port number, when nothing of the host holds it
        async with httpx.AsyncClient() as http:
            r = await http.get(f"http://{address}:{row['hostPort']}/index.html")
            assert r.text == "hello-port\n"
            shared = await env.call("rig.sharePort", rigId=rig, guestPort=18080)
            lan = shared["ports"][0]["lanPort"]
            assert isinstance(lan, int) and lan not in (0, row["hostPort"])
            assert shared["ports"][0]["hostAddress"] == address
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
                await http.get(f"http://{address}:{row['hostPort']}/")


async def test_a_rig_never_takes_a_host_services_port_on_127_0_0_1(tmp_path: Path) -> None:
    """A host service (a local model server, a database) is down; a rig listens on its port number. The forward
    keeps the number on the rig's own address: clients of the service never reach the rig, and the service, once
    back, binds its port and gets its traffic."""
    port = free_port()
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        await env.exec(rig, SERVE.format(tag="rig-site", port=port))
        [row] = await ports_when(env, rig, lambda rows: len(rows) == 1)
        assert row["hostPort"] == port and row["hostAddress"] != "127.0.0.1"
        async with httpx.AsyncClient() as http:
            with pytest.raises(httpx.ConnectError):  # the service is down: nothing answers, the rig least of all
                await http.get(f"http://127.0.0.1:{port}/index.html")

            async def host_service(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                await reader.readuntil(b"\r\n\r\n")
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nConnection: close\r\n\r\nhost service\n")
                await writer.drain()
                writer.close()

            service = await asyncio.start_server(host_service, "127.0.0.1", port)  # the service comes back
            try:
                assert (await http.get(f"http://127.0.0.1:{port}/index.html")).text == "host service\n"
                assert (await http.get(f"http://{row['hostAddress']}:{port}/index.html")).text == "rig-site\n"
            finally:
                service.close()


async def test_two_rigs_forward_the_same_guest_port_each_on_its_own_address(tmp_path: Path) -> None:
    port = free_port()
    async with rigs_server(tmp_path) as env:
        rows = {}
        for tag in ("first-rig", "second-rig"):
            rig = await env.open(await env.new_space(tag))  # a space's terminal is reused: one space each
            await env.exec(rig, SERVE.format(tag=tag, port=port))
            [rows[tag]] = await ports_when(env, rig, lambda rows: len(rows) == 1)
        assert rows["first-rig"]["hostAddress"] != rows["second-rig"]["hostAddress"]
        async with httpx.AsyncClient() as http:
            for tag, row in rows.items():
                assert row["hostPort"] == port
                assert (await http.get(f"http://{row['hostAddress']}:{port}/index.html")).text == f"{tag}\n"


async def test_the_ports_the_servers_configuration_names_are_never_bound(tmp_path: Path) -> None:
    """The server's listener, its site and the port of its public origin: a rig listening on one gets an
    OS-assigned port instead, on its own address, so a restarted server finds each free."""
    site, public = free_port(), free_port()
    async with rigs_server(tmp_path, site_port=site, public_url=f"https://hangar.example.test:{public}") as env:
        own = int(env.srv.url.rsplit(":", 1)[1])
        rig = await env.open()
        for tag, port in (("site", site), ("public", public), ("own", own)):
            await env.exec(rig, SERVE.format(tag=tag, port=port))
        rows = await ports_when(env, rig, lambda rows: len(rows) == 3)
        async with httpx.AsyncClient() as http:
            for row in rows:
                assert row["forwarded"] and row["hostPort"] not in (site, public, own), row
                reply = await http.get(f"http://{row['hostAddress']}:{row['hostPort']}/index.html")
                assert reply.status_code == 200
        for port in (site, public):
            assert is_free(port)  # nothing holds them, on any address


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
        # A host port someone already holds on every address, below the others so it is among the 16 forwarded.
        taken = next(p for p in range(18990, 19000) if is_free(p))
        squatter = socket.socket()
        squatter.bind(("0.0.0.0", taken))
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
