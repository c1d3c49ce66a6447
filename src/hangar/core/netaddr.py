"""Client addresses as limits count them, and the networks an operator names (trusted proxies).

One person rarely holds one IPv6 address: a host is handed a whole /64 and may pick any address in it, so a limit
keyed on the exact address would be no limit. ``address_key`` counts an IPv6 address under its /64
(``IPV6_PREFIX``) and an IPv4 address (or an IPv4-mapped IPv6 one) as itself. Anything that is not an IP address
(a Unix socket's name, a test client's ``testclient``) is its own key.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

IPV6_PREFIX = 64

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        addr = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


def address_key(host: str) -> str:
    """The key ``host`` counts under: an IPv4 address itself, an IPv6 address's /64 network."""
    addr = _address(host)
    if addr is None:
        return host
    if isinstance(addr, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((addr, IPV6_PREFIX), strict=False))
    return str(addr)


def networks(values: Iterable[str]) -> tuple[Network, ...]:
    """The networks of addresses or CIDR notations as settings hold them (already checked there)."""
    return tuple(ipaddress.ip_network(v, strict=False) for v in values)


def in_networks(host: str, networks: Iterable[Network]) -> bool:
    addr = _address(host)
    return addr is not None and any(addr in net for net in networks)
