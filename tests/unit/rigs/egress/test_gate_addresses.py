"""The gate resolves an allowed name itself and refuses to connect where it resolves to loopback, link-local
(metadata), private or other special-purpose addresses: HTTP is answered 403 saying why, TLS is closed, and both
are logged against the rig. The host's resolver is stood in for by ``socket.getaddrinfo`` answering as a hostile
DNS record would; a peer listens where the record points, and nothing reaches it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

from hangar.rigs.egress.gate import EgressGate
from tests.support.resolver import answering, loopback_address, only_loopback
from tests.unit.rigs.egress.gate_support import start_gate
from tests.unit.rigs.egress.test_gate import http_get
from tests.unit.rigs.egress.test_sni import client_hello


class Peer:
    """Listens on ports 80 and 443 of a loopback address of its own (as the host's own service would)."""

    def __init__(self) -> None:
        self.address = loopback_address()
        self.received = bytearray()
        self.servers: list[asyncio.AbstractServer] = []

    async def start(self) -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.received += await reader.read(65536)
            writer.close()

        for port in (80, 443):
            self.servers.append(await asyncio.start_server(handle, self.address, port))


@pytest.fixture
async def peer() -> AsyncIterator[Peer]:
    p = Peer()
    await p.start()
    yield p
    for server in p.servers:
        server.close()


@pytest.fixture(autouse=True)
def guard(monkeypatch: pytest.MonkeyPatch) -> None:
    only_loopback(monkeypatch)


@pytest.fixture
async def gate() -> AsyncIterator[EgressGate]:
    g = await start_gate(lambda ports: EgressGate("rig-x", {"exact.example.com", "*.wild.example.com"}, ports=ports))
    yield g
    await g.aclose()


async def test_loopback_and_metadata_are_refused_even_for_an_exact_entry(
    gate: EgressGate, peer: Peer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    answering(monkeypatch, {"exact.example.com": peer.address})
    caplog.set_level(logging.WARNING, "hangar.rigs.egress")
    reply = await http_get(gate.ports.http, "exact.example.com")
    # The rig and its watchers are told why, never the address the name resolved to (an internal resolver's
    # answers are not theirs to read); the server's log keeps it.
    why = "exact.example.com resolves to a loopback address, which rigs never reach"
    assert reply.startswith(b"HTTP/1.1 403 Forbidden") and reply.endswith(f"is refused: {why}\n".encode())
    assert peer.address.encode() not in reply
    event = gate.events[-1]
    assert (event.kind, event.target, event.allowed, event.reason) == ("http", "exact.example.com", False, why)
    assert f"exact.example.com resolves to {peer.address}, a loopback address, which rigs never reach" in caplog.text
    reader, writer = await asyncio.open_connection("127.0.0.1", gate.ports.tls)
    writer.write(client_hello("exact.example.com"))
    assert await asyncio.wait_for(reader.read(), 5) == b""
    writer.close()
    assert (gate.events[-1].kind, gate.events[-1].reason) == ("tls", why)
    answering(monkeypatch, {"exact.example.com": "169.254.169.254"})
    reply = await http_get(gate.ports.http, "exact.example.com")
    assert b"resolves to the cloud metadata service, which rigs never reach" in reply
    assert b"169.254.169.254" not in reply and "169.254.169.254" not in gate.events[-1].reason
    assert peer.received == b""


async def test_private_addresses_only_for_exact_entries(
    gate: EgressGate, peer: Peer, monkeypatch: pytest.MonkeyPatch
) -> None:
    answering(monkeypatch, {"db.wild.example.com": "10.20.30.40"})
    reply = await http_get(gate.ports.http, "db.wild.example.com")
    assert reply.startswith(b"HTTP/1.1 403") and (
        b"resolves to a private address, which rigs reach only when an admin named the host" in reply
    )
    assert b"10.20.30.40" not in reply
    # a name under the wildcard pointing at the host's loopback is refused the same way
    answering(monkeypatch, {"db.wild.example.com": peer.address})
    assert b"a loopback address" in await http_get(gate.ports.http, "db.wild.example.com")
    assert peer.received == b""


async def test_an_admin_grant_of_an_exact_name_opens_private_addresses_for_it(gate: EgressGate) -> None:
    """Decided from the allowlist: exact entries (and exact grants) may reach private addresses, a ``*.suffix``
    entry's names may not (no traffic is sent to a private address here)."""
    assert gate._named("exact.example.com") and gate._named("EXACT.example.com.")
    assert not gate._named("db.wild.example.com")
    gate.grant(["db.wild.example.com"])
    assert gate._named("db.wild.example.com")


async def test_the_developer_baseline_never_reaches_private_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    """The built-in baseline names public services, nobody's private network: a private answer for one of them
    (a poisoned or split-horizon resolver) is refused though the name is on the allowlist exactly."""
    g = await start_gate(lambda ports: EgressGate("rig-x", {"pypi.org", "mirror.corp.example"}, ports=ports))
    try:
        assert not g._named("pypi.org") and g._named("mirror.corp.example")
        answering(monkeypatch, {"pypi.org": "10.20.30.40"})
        reply = await http_get(g.ports.http, "pypi.org")
        assert reply.startswith(b"HTTP/1.1 403") and b"pypi.org resolves to a private address" in reply
    finally:
        await g.aclose()
