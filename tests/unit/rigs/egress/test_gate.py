"""The gate's checks against real peers on host loopback (its listeners bound in this namespace)."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import AsyncIterator

import pytest

from hangar.rigs.egress.gate import EgressGate
from hangar.rigs.egress.rules import GATE_ADDRESS
from tests.unit.rigs.egress.gate_support import start_gate
from tests.unit.rigs.egress.test_dns import query
from tests.unit.rigs.egress.test_sni import client_hello


class Upstream:
    """A TCP server on loopback that records what arrives and answers a fixed HTTP response."""

    def __init__(self) -> None:
        self.received = bytearray()
        self.server: asyncio.AbstractServer | None = None
        self.port = 0

    async def start(self) -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.received += await reader.read(65536)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nupstream")
            await writer.drain()
            writer.close()

        self.server = await asyncio.start_server(handle, "127.0.0.1", 0)
        self.port = int(self.server.sockets[0].getsockname()[1])


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    up = Upstream()
    await up.start()
    yield up
    assert up.server is not None
    up.server.close()


@pytest.fixture
async def gate(upstream: Upstream) -> AsyncIterator[EgressGate]:
    # The names the gate must refuse lead to the same upstream too, so a name let through would show there (and
    # not merely fail to resolve).
    overrides = {
        f"{name}:{port}": ("127.0.0.1", upstream.port)
        for name in ("granted.test", "evil.example")
        for port in (80, 443)
    }
    g = await start_gate(lambda ports: EgressGate("rig-x", {"granted.test"}, ports=ports, upstream_overrides=overrides))
    yield g
    await g.aclose()


async def http_get(port: int, host: str) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET /x HTTP/1.1\r\nHost: {host}\r\nUser-Agent: t\r\n\r\n".encode())
    data = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    return data


async def test_http_allowed_host_reaches_upstream(gate: EgressGate, upstream: Upstream) -> None:
    reply = await http_get(gate.ports.http, "granted.test")
    assert reply.endswith(b"upstream")
    assert upstream.received.startswith(b"GET /x HTTP/1.1\r\nHost: granted.test\r\n")
    assert gate.events[-1].kind == "http" and gate.events[-1].allowed


async def test_http_carries_one_request_per_connection(gate: EgressGate, upstream: Upstream) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", gate.ports.http)
    writer.write(
        b"GET /a HTTP/1.1\r\nHost: granted.test\r\nConnection: keep-alive\r\n\r\n"
        b"GET /b HTTP/1.1\r\nHost: evil.example\r\n\r\n"
    )
    assert (await asyncio.wait_for(reader.read(), 5)).endswith(b"upstream")
    writer.close()
    head = bytes(upstream.received).split(b"\r\n\r\n")[0]
    assert head == b"GET /a HTTP/1.1\r\nHost: granted.test\r\nConnection: close"


async def test_http_unlisted_host_and_other_port_are_refused(gate: EgressGate, upstream: Upstream) -> None:
    assert (await http_get(gate.ports.http, "evil.example")).startswith(b"HTTP/1.1 403")
    assert (await http_get(gate.ports.http, "granted.test:8080")).startswith(b"HTTP/1.1 403")
    assert upstream.received == b""
    assert [(e.target, e.allowed, e.reason) for e in list(gate.events)[-2:]] == [
        ("evil.example", False, "host not allow-listed"),
        ("granted.test:8080", False, "port not 80"),
    ]


async def test_tls_passes_allowed_sni_and_drops_others(gate: EgressGate, upstream: Upstream) -> None:
    hello = client_hello("granted.test")
    reader, writer = await asyncio.open_connection("127.0.0.1", gate.ports.tls)
    writer.write(hello)
    assert (await asyncio.wait_for(reader.read(), 5)).endswith(b"upstream")
    assert bytes(upstream.received) == hello  # replayed untouched
    writer.close()
    upstream.received.clear()
    # Refused for the name it asks for (an unlisted one, or none), never forwarded: not because it cannot be reached.
    for name, reason in (("evil.example", "SNI not allow-listed"), (None, "no SNI")):
        reader, writer = await asyncio.open_connection("127.0.0.1", gate.ports.tls)
        writer.write(client_hello(name))
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
        assert upstream.received == b""
        last = gate.events[-1]
        assert (last.kind, last.target, last.allowed, last.reason) == ("tls", name or "?", False, reason)


async def test_dns_over_udp_and_tcp_and_grants(gate: EgressGate) -> None:
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setblocking(False)
    await loop.sock_connect(sock, ("127.0.0.1", gate.ports.dns))
    await loop.sock_sendall(sock, query("granted.test"))
    reply = await asyncio.wait_for(loop.sock_recv(sock, 512), 5)
    assert reply[-4:] == socket.inet_aton(GATE_ADDRESS)
    sock.close()
    reader, writer = await asyncio.open_connection("127.0.0.1", gate.ports.dns)
    q = query("later.example.com")
    writer.write(struct.pack("!H", len(q)) + q)
    size = struct.unpack("!H", await reader.readexactly(2))[0]
    assert (await reader.readexactly(size))[3] & 0xF == 3  # NXDOMAIN
    gate.grant(["*.example.com"])
    writer.write(struct.pack("!H", len(q)) + q)
    size = struct.unpack("!H", await reader.readexactly(2))[0]
    assert (await reader.readexactly(size))[-4:] == socket.inet_aton(GATE_ADDRESS)
    writer.close()
    assert [(e.kind, e.target, e.allowed) for e in list(gate.events)[-3:]] == [
        ("dns", "granted.test", True),
        ("dns", "later.example.com", False),
        ("dns", "later.example.com", True),
    ]


async def test_deny_listeners_log_and_close(gate: EgressGate) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", gate.ports.deny_tcp)
    assert await asyncio.wait_for(reader.read(), 5) == b""
    writer.close()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.sendto(b"leak", ("127.0.0.1", gate.ports.deny_udp))
    udp.close()
    for _ in range(100):
        if gate.events and gate.events[-1].kind == "udp":
            break
        await asyncio.sleep(0.01)
    kinds = [(e.kind, e.allowed) for e in list(gate.events)[-2:]]
    assert kinds == [("tcp", False), ("udp", False)]


async def test_closing_the_gate_ends_the_relays_going_through_it() -> None:
    """An upstream that never answers nor hangs up keeps a relay open; the rig's end (``aclose``) ends it."""
    arrived = asyncio.Event()
    stuck: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        stuck.append(writer)
        await reader.read(65536)
        arrived.set()
        await asyncio.Event().wait()  # never answers; ends when the test's server closes

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = int(server.sockets[0].getsockname()[1])
    overrides = {"granted.test:443": ("127.0.0.1", port)}
    gate = await start_gate(
        lambda ports: EgressGate("rig-x", {"granted.test"}, ports=ports, upstream_overrides=overrides)
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", gate.ports.tls)
    writer.write(client_hello("granted.test"))
    await asyncio.wait_for(arrived.wait(), 5)
    await gate.aclose()
    assert await asyncio.wait_for(reader.read(), 5) == b""  # the rig's side was hung up
    writer.close()
    for w in stuck:
        w.close()
    server.close()


async def test_a_rig_holds_at_most_its_cap_of_connections_to_its_gate(
    gate: EgressGate, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("hangar.rigs.egress.gate.MAX_CONNECTIONS", 8, raising=False)
    # Eight heads left unsent (each waits for its request head) hold the rig's eight places.
    held = [await asyncio.open_connection("127.0.0.1", gate.ports.http) for _ in range(8)]
    for _ in range(100):
        if len(gate._connections) == 8:
            break
        await asyncio.sleep(0.02)
    assert len(gate._connections) == 8
    # One past the cap is closed at once, on any of the gate's listeners, and the refusal is recorded.
    for port in (gate.ports.http, gate.ports.tls, gate.ports.dns):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
    refusals = [e for e in gate.events if not e.allowed and "connections to its gate" in e.reason]
    assert len(refusals) == 1
    # A place given back is a place free again.
    held.pop()[1].close()
    for _ in range(100):
        if len(gate._connections) < 8:
            break
        await asyncio.sleep(0.02)
    assert (await http_get(gate.ports.http, "granted.test")).endswith(b"upstream")
    for _reader, writer in held:
        writer.close()
