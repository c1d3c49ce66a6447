"""The host's resolver answering as a hostile DNS record would, for the egress gate's address checks, and a
guard that keeps every connection of the test on this host.

The gate runs in the test's own process (the server is in-process), so ``socket.getaddrinfo`` is where the
host's answers come from: ``answering`` makes chosen names resolve to chosen addresses (the rest as usual).
``only_loopback`` makes ``asyncio.open_connection`` fail, before any packet is sent, for anything that does not
resolve to loopback alone: a test that points a name at a private or metadata address must never reach one,
whatever the code under test decides. ``public_stand_in`` makes the server's address rules take one loopback
address of the test's own for a public one: the stand-in for a server on the internet, which no test reaches.
"""

from __future__ import annotations

import asyncio
import ipaddress
import secrets
import socket
from collections.abc import Mapping
from typing import Any

import pytest

from hangar.core import addresses


def answering(monkeypatch: pytest.MonkeyPatch, records: Mapping[str, str | None]) -> None:
    """``records``: a name and its address, or None for a name that does not exist."""
    real = socket.getaddrinfo

    def lookup(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        if isinstance(host, str) and host in records:
            address = records[host]
            if address is None:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            sockaddr = (address, int(port or 0)) if family == socket.AF_INET else (address, int(port or 0), 0, 0)
            return [(family, socket.SOCK_STREAM, 6, "", sockaddr)]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", lookup)


def only_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    real = asyncio.open_connection

    async def guarded(host: Any = None, port: Any = None, *args: Any, **kwargs: Any) -> Any:
        if host is not None:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
            answers = {str(info[4][0]) for info in infos}
            if not all(ipaddress.ip_address(a).is_loopback for a in answers):
                raise OSError(f"test guard: no connection to {host} ({', '.join(sorted(answers))}) leaves this host")
        return await real(host, port, *args, **kwargs)

    monkeypatch.setattr(asyncio, "open_connection", guarded)


def loopback_address() -> str:
    """A loopback address of a test's own (outside 127.0.0.0/16 and the rigs' 127.128.0.0/9), so a listener on a
    well-known port there meets no other test's."""
    return f"127.{secrets.randbelow(100) + 20}.{secrets.randbelow(250) + 1}.{secrets.randbelow(250) + 1}"


def public_stand_in(monkeypatch: pytest.MonkeyPatch, address: str) -> None:
    real = addresses.refusal

    def refusal(candidate: addresses.IPAddress, *, named: bool) -> str | None:
        return None if str(candidate) == address else real(candidate, named=named)

    monkeypatch.setattr(addresses, "refusal", refusal)
