"""Port forwards of rigs on a rig host: the guest's listening ports mirrored on the server's host, each connection
carried over the rig host's link as a stream lane with flow control (``hangar.rigs.hosts.streams``); and a
terminal's output held to the same window, so a terminal nobody reads stalls nothing else on the link.

Real processes: the server (in this process, on loopback, on real enclosures) and a ``hangar rig-host`` process on
a data directory of its own, dialling it; real HTTP clients reaching the forward on the server's host.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from hangar.errors import InvalidArgs, NotFound, Refused, Unavailable
from hangar.rigs.hosts import streams
from hangar.rigs.hosts.link import HostLink
from hangar.rigs.hosts.remote import RemoteRig
from hangar.rigs.loopback import is_rig_address
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.integration.test_rig_hosts import BOUND_S, connected, hosts_first, mint, rig_host
from tests.integration.test_rigs_ops_ports import SERVE, ports_when
from tests.integration.test_rigs_ops_terminal import read_until, terminal_url
from tests.support.processes import cli

pytestmark = [pytest.mark.packs("terminal"), pytest.mark.slow]

# A guest server that answers every connection with an endless body (and takes 1,024 waiting connections).
ENDLESS = """cat > ~/endless.py <<'EOF'
import socket, sys, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen(1024)
def serve(c):
    try:
        c.recv(1024)
        c.sendall(b"HTTP/1.0 200 OK\\r\\n\\r\\n")
        while True:
            c.sendall(b"x" * 65536)
    except OSError:
        pass
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF
setsid -f python3 ~/endless.py {port} >/dev/null 2>&1"""


def remote(env: RigsEnv, rig: str) -> RemoteRig:
    handle = env.manager.live(env.ws, rig).handle
    assert isinstance(handle, RemoteRig)
    return handle


async def forward_of(env: RigsEnv, rig: str, port: int) -> tuple[str, int]:
    rows = await ports_when(env, rig, lambda rows: any(r["guestPort"] == port and r["forwarded"] for r in rows))
    [row] = [r for r in rows if r["guestPort"] == port]
    assert is_rig_address(row["hostAddress"]), row
    return row["hostAddress"], row["hostPort"]


async def endless(address: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection through the forward, its body started."""
    reader, writer = await asyncio.open_connection(address, port)
    writer.write(b"GET / HTTP/1.0\r\n\r\n")
    await writer.drain()
    assert (await reader.readexactly(19)) == b"HTTP/1.0 200 OK\r\n\r\n"
    assert await reader.readexactly(1024) == b"x" * 1024
    return reader, writer


async def ends(reader: asyncio.StreamReader) -> None:
    """The connection ends (what was in flight drained first)."""
    async with asyncio.timeout(BOUND_S):
        try:
            while await reader.read(2**20):
                pass
        except ConnectionError:
            pass


async def test_a_web_server_in_a_rig_on_a_rig_host_is_reached_through_its_forward(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        hosts_first(env)
        host_id = mint(env, "ports-1", tmp_path / "cred")
        with rig_host(env, tmp_path / "cred", tmp_path / "host.log") as proc:
            await connected(env, proc, tmp_path / "host.log")
            rig = await env.open()
            assert env.manager.live(env.ws, rig).host_id == host_id
            # A web server in the rig, with a file of several windows: its listening port is mirrored on the
            # server's host, on the rig's own loopback address, and reached there.
            await env.exec(rig, "mkdir -p ~/site && head -c 4194309 /dev/urandom > ~/site/big.bin")
            await env.exec(rig, SERVE.format(tag="site", port=18080))
            digest = (await env.exec(rig, "sha256sum ~/site/big.bin"))["stdout"].split()[0]
            address, port = await forward_of(env, rig, 18080)
            async with httpx.AsyncClient(timeout=BOUND_S) as http:
                assert (await http.get(f"http://{address}:{port}/index.html")).text == "site\n"
                big = await http.get(f"http://{address}:{port}/big.bin")
                assert big.status_code == 200 and hashlib.sha256(big.content).hexdigest() == digest
                # Shared on the local network, as for a rig of the server's own.
                shared = await env.call("rig.sharePort", rigId=rig, guestPort=18080)
                lan = shared["ports"][0]["lanPort"]
                assert (await http.get(f"http://127.0.0.1:{lan}/index.html")).text == "site\n"
                await env.call("rig.sharePort", rigId=rig, guestPort=18080, share=False)
            await lanes_gone_but(env, host_id, keep=0)

            # A reader that stops reading stalls its own lane only: what the server holds for it stays within the
            # window, and the link goes on serving the rig (an exec answers).
            await env.exec(rig, ENDLESS.format(port=18090))
            address, port = await forward_of(env, rig, 18090)
            reader, writer = await endless(address, port)
            hosts = env.manager.opener.hosts
            assert hosts is not None
            link = hosts.link(host_id)
            assert link is not None
            async with asyncio.timeout(BOUND_S):  # the guest writes on; the lane fills towards its window, and waits
                while max((lane.held for lane in link.streams.values()), default=0) < streams.WINDOW // 2:
                    await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)  # a moment more of the guest writing changes nothing
            assert all(lane.held <= streams.WINDOW for lane in link.streams.values())
            assert (await env.exec(rig, "echo still"))["stdout"] == "still\n"
            assert await reader.readexactly(1024) == b"x" * 1024  # and the stalled one goes on when read again

            # Refusals, from the rig host, as they are: nothing listening, a port out of range.
            handle = remote(env, rig)
            with pytest.raises(Unavailable, match="nothing listens on port 18099"):
                await handle.connect(18099)
            for bad in (0, 65536):
                with pytest.raises(InvalidArgs, match="guest_port must be between 1 and 65535"):
                    await handle.connect(bad)
            # The rig host's own checks of what a server asks (a server's word is checked like any input).
            top = streams.SERVER_CHANNELS
            for channel in (5, top, 1 << 32, "x"):
                with pytest.raises(InvalidArgs, match="a stream lane's channel is a number above"):
                    await link.call("streamOpen", rig=rig, port=18090, channel=channel)
            with pytest.raises(InvalidArgs, match=r"stream lane \d+ is open already"):
                await link.call("streamOpen", rig=rig, port=18090, channel=next(iter(link.streams)))
            with pytest.raises(InvalidArgs, match="port must be a number"):
                await link.call("streamOpen", rig=rig, port="18090", channel=top + 10**6)
            with pytest.raises(NotFound, match="runs no rig"):
                await link.call("streamOpen", rig="r" * 26, port=18090, channel=top + 10**6)
            opened = await link.call("streamOpen", rig=rig, port=18090, channel=(1 << 32) - 1)  # the top one: taken
            assert opened == {}
            await link.send_event({"event": "streamEnd", "channel": (1 << 32) - 1})
            # At most LANES_MAX connections at once on one link: at the limit taken, one more refused.
            held = [await handle.connect(18090) for _ in range(streams.LANES_MAX - len(link.streams))]
            assert len(link.streams) == streams.LANES_MAX
            with pytest.raises(Refused, match=f"at most {streams.LANES_MAX} connections into rigs"):
                await handle.connect(18090)
            for _r, w in held:
                w.close()
            await lanes_gone_but(env, host_id, keep=1)
            extra = await handle.connect(18090)  # room again
            extra[1].close()

            # Closing the rig ends the connection still open through its forward.
            await env.call("rig_close", rigId=rig)
            await ends(reader)
            writer.close()
            with pytest.raises(OSError):
                await asyncio.open_connection(address, port)  # its listener is gone


async def lanes_gone_but(env: RigsEnv, host_id: str, keep: int) -> None:
    hosts = env.manager.opener.hosts
    assert hosts is not None
    async with asyncio.timeout(BOUND_S):
        while (link := hosts.link(host_id)) is not None and len(link.streams) > keep:
            await asyncio.sleep(0.05)


async def test_revoking_the_rig_hosts_credential_ends_a_connection_mid_stream(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        hosts_first(env)
        host_id = mint(env, "ports-2", tmp_path / "cred")
        with rig_host(env, tmp_path / "cred", tmp_path / "host.log") as proc:
            await connected(env, proc, tmp_path / "host.log")
            rig = await env.open()
            await env.exec(rig, ENDLESS.format(port=18090))
            address, port = await forward_of(env, rig, 18090)
            reader, writer = await endless(address, port)
            cli(env.srv.data_dir, "admin", "rig-host-credential", "revoke", host_id)
            await ends(reader)  # nothing more is delivered once the host is refused
            writer.close()
            assert await asyncio.to_thread(proc.wait, BOUND_S) == 1
            async with asyncio.timeout(BOUND_S):
                while (await env.status(rig))["status"] != "failed":
                    await asyncio.sleep(0.2)
            with pytest.raises(OSError):
                await asyncio.open_connection(address, port)  # the failed rig's forward is gone


@contextlib.asynccontextmanager
async def terminal_on_a_host(
    tmp_path: Path, name: str
) -> AsyncIterator[tuple[RigsEnv, str, tuple[str, int], HostLink, Any]]:
    """A terminal rig on a rig host (credential ``name``) running the endless server behind a forward of port
    18090, the host's link on the server, and a person's terminal lane into the rig (80x24)."""
    async with rigs_server(tmp_path) as env:
        hosts_first(env)
        host_id = mint(env, name, tmp_path / "cred")
        with rig_host(env, tmp_path / "cred", tmp_path / "host.log") as proc:
            await connected(env, proc, tmp_path / "host.log")
            rig = await env.open()
            await env.exec(rig, ENDLESS.format(port=18090))
            forward = await forward_of(env, rig, 18090)
            hosts = env.manager.opener.hosts
            assert hosts is not None
            link = hosts.link(host_id)
            assert link is not None
            headers = {"Authorization": f"Bearer {env.srv.owner_token}"}
            url = await terminal_url(env, rig)
            async with websockets.connect(url + "&cols=80&rows=24", additional_headers=headers) as term:
                yield env, rig, forward, link, term


async def test_a_terminal_nobody_reads_holds_its_window_and_stalls_nothing_else(tmp_path: Path) -> None:
    async with terminal_on_a_host(tmp_path, "ports-3") as (env, rig, (address, port), link, term):
        await term.send(b"yes\n")  # endless output, and this client stops reading
        async with asyncio.timeout(BOUND_S):  # the terminal's output backs up to its window on the server
            while max((p.held for p in link.ptys.values()), default=0) < streams.WINDOW // 2:
                await asyncio.sleep(0.05)
        # The link goes on for everything else: a request, and a connection through a forward.
        assert (await env.exec(rig, "echo still"))["stdout"] == "still\n"
        _, writer = await endless(address, port)
        writer.close()
        assert all(p.held <= streams.WINDOW for p in link.ptys.values())
        # Read again: the output flows, and the shell answers once stopped.
        await term.send(b"\x03")
        await term.send(b"echo after-$((6*7))\n")
        tail = b""
        async with asyncio.timeout(BOUND_S):
            while b"after-42" not in tail:
                frame = await term.recv()
                tail = (tail + (frame if isinstance(frame, bytes) else frame.encode()))[-64:]


async def test_keystrokes_a_shell_does_not_read_hold_up_only_its_terminal(tmp_path: Path) -> None:
    async with terminal_on_a_host(tmp_path, "ports-4") as (env, rig, (address, port), link, term):
        # A raw terminal (as a full-screen program sets it) whose program reads no input: the kernel takes
        # a few KiB of keystrokes, then writing more into the terminal waits.
        await term.send(b"stty raw -echo; echo ready-$((6*7)); sleep 1000\n")
        await read_until(term, b"ready-42")
        for _ in range(8):  # 1 MiB pasted, in messages under the listener's cap
            await term.send(b"x" * 128 * 1024)
        async with asyncio.timeout(BOUND_S):  # the terminal's window on the rig host fills, and it waits
            while min((p.input_credit.left for p in link.ptys.values()), default=streams.WINDOW) >= (streams.CHUNK):
                await asyncio.sleep(0.05)
        # Everything else on the link goes on.
        assert (await env.exec(rig, "echo still"))["stdout"] == "still\n"
        _, writer = await endless(address, port)
        writer.close()
