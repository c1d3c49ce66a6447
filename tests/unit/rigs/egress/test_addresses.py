"""Where the gate may connect after resolving: loopback, link-local (metadata), multicast, unspecified and other
special-purpose addresses never; private ones and this host's own only for exact allowlist entries; IPv4 carried
in IPv6 judged as the IPv4 it is. The address checked is the one connected to: the name is resolved once."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from hangar.core.addresses import AddressRefused, is_host_own, permitted, refusal
from hangar.rigs.egress.upstream import connect
from tests.support.resolver import public_stand_in

NEVER = {
    "127.0.0.1": "a loopback address",
    "127.200.3.4": "a loopback address",
    "::1": "a loopback address",
    "::ffff:127.0.0.1": "a loopback address",
    "2002:7f00:1::1": "a loopback address",  # 6to4 carrying 127.0.0.1
    "64:ff9b::7f00:1": "a loopback address",  # NAT64 carrying 127.0.0.1
    "169.254.169.254": "the cloud metadata service",
    "::ffff:169.254.169.254": "the cloud metadata service",
    "fd00:ec2::254": "the cloud metadata service",
    "100.100.100.200": "a cloud metadata service",
    "169.254.10.1": "a link-local address",
    "fe80::1": "a link-local address",
    "0.0.0.0": "an unspecified address",
    "::": "an unspecified address",
    "224.0.0.251": "a multicast address",
    "ff02::fb": "a multicast address",
    "240.0.0.1": "a reserved address",
    "255.255.255.255": "a reserved address",
    "::7f00:1": "a reserved address",  # IPv4-compatible, deprecated
}
PRIVATE = {
    "10.1.2.3": "a private address",
    "172.16.0.1": "a private address",
    "172.31.255.254": "a private address",
    "192.168.1.1": "a private address",
    "fd12:3456::1": "a private address",
    "::ffff:10.0.0.1": "a private address",
    "100.64.0.1": "a shared (carrier-grade NAT) address",
    "100.127.255.254": "a shared (carrier-grade NAT) address",
}
# 203.0.113.80: a documentation block, where some networks' egress proxy answers for public names
PUBLIC = ("140.82.112.3", "151.101.0.223", "2606:4700::6810:84e5", "2002:8c52:7003::1", "172.32.0.1", "100.128.0.1",
          "203.0.113.80")  # fmt: skip


@pytest.mark.parametrize(("answer", "why"), NEVER.items())
def test_never_reached_even_when_an_admin_named_the_host(answer: str, why: str) -> None:
    address = ipaddress.ip_address(answer)
    assert refusal(address, named=False) == why
    assert refusal(address, named=True) == why


@pytest.mark.parametrize(("answer", "why"), PRIVATE.items())
def test_private_reached_only_when_an_admin_named_the_host(answer: str, why: str) -> None:
    address = ipaddress.ip_address(answer)
    assert refusal(address, named=False) == why
    assert refusal(address, named=True) is None


@pytest.mark.parametrize("answer", PUBLIC)
def test_public_addresses_pass(answer: str) -> None:
    assert refusal(ipaddress.ip_address(answer), named=False) is None


def test_this_hosts_own_addresses_are_never_reached(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name resolving to one of this host's (non-loopback) addresses reaches every service listening on all
    interfaces, the server's own listener among them: refused even for a host an admin named."""
    own = ipaddress.ip_address("10.1.2.3")
    monkeypatch.setattr("hangar.core.addresses.is_host_own", lambda a: a == own)
    assert refusal(own, named=True) == "an address of this host"
    assert refusal(ipaddress.ip_address("::ffff:10.1.2.3"), named=True) == "an address of this host"
    assert refusal(ipaddress.ip_address("10.1.2.4"), named=True) is None


def test_is_host_own_tells_the_hosts_addresses() -> None:
    assert is_host_own(ipaddress.ip_address("127.0.0.1"))
    assert not is_host_own(ipaddress.ip_address("140.82.112.3"))


def test_mixed_answers_keep_only_the_permitted_and_a_refusal_says_why() -> None:
    assert permitted("a.example", ["127.0.0.1", "140.82.112.3", "10.0.0.1"], named=False) == ["140.82.112.3"]
    assert permitted("a.example", ["10.0.0.1", "127.0.0.1"], named=True) == ["10.0.0.1"]
    with pytest.raises(AddressRefused) as err:
        permitted("db.corp.example", ["10.0.0.1"], named=False)
    assert err.value.reason == (
        "db.corp.example resolves to 10.0.0.1, a private address, which rigs reach only when an admin named the host"
    )
    with pytest.raises(AddressRefused) as err:
        permitted("meta.example", ["169.254.169.254", "127.0.0.1"], named=True)
    assert err.value.reason == (
        "meta.example resolves to 169.254.169.254, the cloud metadata service, which rigs never reach"
        " (1 more addresses refused too)"
    )
    with pytest.raises(AddressRefused) as err:
        permitted("none.example", [], named=True)
    assert err.value.reason == "none.example resolves to no address"


@pytest.fixture
async def listener() -> AsyncIterator[tuple[str, int, list[bytes]]]:
    """A peer on a loopback address of its own, standing in for a public server."""
    got: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        got.append(await reader.read(100))
        writer.close()

    server = await asyncio.start_server(handle, "127.88.0.1", 0)
    yield "127.88.0.1", int(server.sockets[0].getsockname()[1]), got
    server.close()


async def test_the_address_checked_is_the_address_connected_to(
    monkeypatch: pytest.MonkeyPatch, listener: tuple[str, int, list[bytes]]
) -> None:
    """DNS rebinding: a name answering a permitted address first and the host's loopback after gains nothing,
    because the gate resolves once and connects to the address it checked."""
    address, port, got = listener
    answers = iter([address, "127.0.0.1"])
    asked: list[str] = []

    def rebinding(host: str, *args: Any, **kwargs: Any) -> list[Any]:
        asked.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    public_stand_in(monkeypatch, address)  # this test host reaches no public address
    _, writer = await connect("rebind.example", port, named=False)
    writer.write(b"hello")
    await writer.drain()
    assert writer.get_extra_info("peername")[0] == address
    writer.close()
    for _ in range(100):
        if got:
            break
        await asyncio.sleep(0.01)
    assert got == [b"hello"] and asked == ["rebind.example"]
