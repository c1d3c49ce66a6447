"""The gate's way out: resolve an allowed name on the host, keep the addresses the kernel's rules permit
(``hangar.core.addresses``) and connect to one of exactly those (never to the name again, so the address
checked is the address reached).

Names are looked up with the host's resolver (``getaddrinfo``). The gate's ``upstream_overrides`` (tests' peers)
bypass this module: an override is the server's own configuration naming where a name goes, not a DNS answer.
"""

from __future__ import annotations

import asyncio

from hangar.core.addresses import permitted, resolve

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


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
