"""The gate's way out: resolve an allowed name on the host, keep the addresses ``addresses.refusal`` permits and
connect to one of exactly those (never to the name again, so the address checked is the address reached).

Names are looked up with the host's resolver (``getaddrinfo``). The gate's ``upstream_overrides`` (tests' peers)
bypass this module: an override is the server's own configuration naming where a name goes, not a DNS answer.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket

from hangar.rigs.egress.addresses import refusal

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class AddressRefused(Exception):
    """Every address the name resolved to is one rigs may not reach; ``reason`` says which and why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def resolve(name: str, port: int) -> list[str]:
    """The addresses the host's resolver gives for ``name``, in its order, each once."""
    infos = await asyncio.get_running_loop().getaddrinfo(name, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def permitted(name: str, answers: list[str], *, named: bool) -> list[str]:
    """The answers the gate may connect to; ``AddressRefused`` naming the first refused one when none remain."""
    usable: list[str] = []
    refused: list[str] = []
    for answer in answers:
        try:
            address = ipaddress.ip_address(answer)
        except ValueError:
            refused.append(f"{answer!r}, which is not an address")
            continue
        why = refusal(address, named=named)
        if why is None:
            usable.append(answer)
        elif refusal(address, named=True) is None:
            refused.append(f"{answer}, {why}, which rigs reach only when an admin named the host")
        else:
            refused.append(f"{answer}, {why}, which rigs never reach")
    if usable:
        return usable
    if not refused:
        raise AddressRefused(f"{name} resolves to no address")
    more = f" ({len(refused) - 1} more addresses refused too)" if len(refused) > 1 else ""
    raise AddressRefused(f"{name} resolves to {refused[0]}{more}")


async def connect(name: str, port: int, *, named: bool) -> Streams:
    """A connection to ``name:port`` at an address the rules permit (``AddressRefused`` when none is; the
    ``OSError`` of the last attempt when none answers)."""
    answers = await resolve(name, port)
    failure: OSError | None = None
    for address in permitted(name, answers, named=named):
        try:
            return await asyncio.open_connection(address, port)
        except OSError as exc:
            failure = exc
    assert failure is not None
    raise failure
