"""Each rig's own loopback address on the host: where its port forwards listen.

A forward keeps the guest's port number, so it must not sit on ``127.0.0.1``: there, a rig listening on 11434
or 5432 would take that port whenever the host's own service (a model server, a database, an identity
provider, a second Hangar) is down or restarting, and receive the traffic meant for it. Each rig instead claims
an address of its own in ``127.0.0.0/8`` (Linux routes the whole block to ``lo``, so nothing is configured),
chosen from ``127.128.0.0/9``: ``127.0.0.0/16`` stays with the host (``127.0.0.1``, systemd-resolved's
``127.0.0.53``, Debian's ``127.0.1.1``). A program on the host reaching ``127.0.0.1:<port>`` never reaches a
rig; a person opens the rig's port at ``<rig address>:<port>``.

The claim is host-wide and dies with its holder: an abstract UNIX socket named for the address, bound by the
process that holds the rig. The kernel lets one socket hold a name, across every process on the host sharing
the network namespace (several servers, several data directories), and frees it when that process ends,
crash included, so nothing stale is left to clean up.
"""

from __future__ import annotations

import contextlib
import ipaddress
import secrets
import socket

from hangar.errors import Unavailable

RIG_BLOCK = ipaddress.IPv4Network("127.128.0.0/9")
CLAIM_PREFIX = "hangar-rig-loopback/"
CLAIM_TRIES = 64  # a busy host has a few hundred rigs among 8 million addresses: a clash is rare


def is_rig_address(host: str) -> bool:
    """Whether ``host`` is an IPv4 address of the block rigs' own addresses come from."""
    with contextlib.suppress(ValueError):
        return ipaddress.IPv4Address(host) in RIG_BLOCK
    return False


class LoopbackClaim:
    """One rig's address, held until ``release`` (safe twice)."""

    def __init__(self, address: str, holder: socket.socket) -> None:
        self.address = address
        self._holder: socket.socket | None = holder

    def release(self) -> None:
        holder, self._holder = self._holder, None
        if holder is not None:
            holder.close()


def _candidate() -> str:
    # last octet 1..254: an address that reads as a host's, never a .0 or .255
    offset = secrets.randbelow(RIG_BLOCK.num_addresses // 256) * 256 + 1 + secrets.randbelow(254)
    return str(RIG_BLOCK.network_address + offset)


def claim() -> LoopbackClaim:
    """A loopback address no other live rig on this host holds. ``Unavailable`` when none could be claimed."""
    for _ in range(CLAIM_TRIES):
        address = _candidate()
        holder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            holder.bind(f"\0{CLAIM_PREFIX}{address}")
        except OSError:
            holder.close()
            continue
        return LoopbackClaim(address, holder)
    raise Unavailable(f"no loopback address for the rig's port forwards could be claimed in {RIG_BLOCK}")
