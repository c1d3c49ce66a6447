"""Which addresses the server may connect to on someone else's behalf, checked after resolving a name and before
connecting to exactly that address (so a name that answers differently the second time, DNS rebinding, gains
nothing). One table for every such connection: a rig's egress gate (``hangar.rigs.egress``) and the clones and
fetches of a workspace admin's repos (``hangar.workspace.sources``).

A name is no promise about where it points: a forge's DNS, a split-horizon resolver or a changed record can send
it to this host's loopback, the cloud's metadata service or a machine of the private network. So after
resolving, these are refused:

- always: loopback, unspecified, link-local (the metadata services of the clouds live there, at
  ``169.254.169.254``; also their other known addresses), multicast and the reserved blocks (``240.0.0.0/4``,
  ``::/8``), in their IPv6 forms too, including IPv4 addresses carried inside IPv6 ones (``::ffff:127.0.0.1``,
  6to4, NAT64), and this host's own addresses (every service listening on all interfaces answers there, the
  server's own listener among them);
- unless someone named the host: private networks too (RFC 1918, unique local IPv6, the shared address space
  ``100.64.0.0/10``). Who may name a host is the caller's rule. For the gate it is an exact allowlist entry the
  server's operator or an admin wrote (the apt mirrors this machine uses, the origin of a repo an admin
  registered, the product site's name, ``rig.grantHosts``): that is what a self-hosted forge or a package mirror
  on the LAN looks like. The built-in developer baseline (public forges, registries, model providers) and
  ``*.suffix`` patterns name nobody's network, so a private answer for them is refused. For an admin's clone it
  is the server owner, through the ``trustedRepoHosts`` server setting.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import re
import socket

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Table = tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...]

_NEVER: tuple[tuple[str, str], ...] = (
    ("169.254.169.254/32", "the cloud metadata service"),
    ("100.100.100.200/32", "a cloud metadata service"),
    ("fd00:ec2::254/128", "the cloud metadata service"),
    ("127.0.0.0/8", "a loopback address"),
    ("::1/128", "a loopback address"),
    ("0.0.0.0/8", "an unspecified address"),
    ("::/128", "an unspecified address"),
    ("169.254.0.0/16", "a link-local address"),
    ("fe80::/10", "a link-local address"),
    ("224.0.0.0/4", "a multicast address"),
    ("ff00::/8", "a multicast address"),
    ("240.0.0.0/4", "a reserved address"),
    ("::/8", "a reserved address"),
)
_PRIVATE: tuple[tuple[str, str], ...] = (
    ("10.0.0.0/8", "a private address"),
    ("172.16.0.0/12", "a private address"),
    ("192.168.0.0/16", "a private address"),
    ("fc00::/7", "a private address"),
    ("fec0::/10", "a private address"),
    ("100.64.0.0/10", "a shared (carrier-grade NAT) address"),
)
NEVER: Table = tuple((ipaddress.ip_network(net), why) for net, why in _NEVER)
PRIVATE: Table = tuple((ipaddress.ip_network(net), why) for net, why in _PRIVATE)
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))


_LABEL = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")


def normalize_host(name: str) -> str:
    return name.strip().lower().rstrip(".")


def is_valid_name(name: str) -> bool:
    """A DNS host name (not an IP literal): labels of letters, digits, ``-``; the last label not numeric."""
    if not name or len(name) > 253:
        return False
    labels = name.split(".")
    return all(_LABEL.match(label) for label in labels) and not labels[-1].isdigit()


def _carried(address: IPAddress) -> IPAddress | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, NAT64), which is where a packet to it ends up."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if any(address in net for net in _NAT64):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _listed(address: IPAddress, table: Table) -> str | None:
    return next((why for net, why in table if address.version == net.version and address in net), None)


def is_host_own(address: IPAddress) -> bool:
    """Whether ``address`` is one of this host's own (binding to it succeeds only then): a packet to it never
    leaves the host, and every service listening on all interfaces answers there."""
    family = socket.AF_INET if address.version == 4 else socket.AF_INET6
    with socket.socket(family, socket.SOCK_DGRAM) as probe, contextlib.suppress(OSError):
        probe.bind((str(address), 0))
        return True
    return False


def refusal(address: IPAddress, *, named: bool) -> str | None:
    """Why the server must not connect to ``address`` (None when it may). ``named``: someone the caller trusts
    for it named the host exactly, so it may reach private addresses. An IPv6 address carrying an IPv4 one is
    judged as that IPv4 address, where its packets end up."""
    judged = _carried(address) or address
    never = _listed(judged, NEVER)
    if never is not None:
        return never
    if is_host_own(address) or (judged is not address and is_host_own(judged)):
        return "an address of this host"
    private = _listed(judged, PRIVATE)
    if private is not None:
        return None if named else private
    # Nothing broader (``not is_global``): documentation and benchmarking blocks are where some networks put
    # their egress proxy, and a public name resolving there is that network's choice, not the rig's.
    return None


class AddressRefused(Exception):
    """Every address the name resolved to is one the caller may not reach; ``reason`` says which and why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def resolve(name: str, port: int) -> list[str]:
    """The addresses the host's resolver gives for ``name``, in its order, each once (``OSError`` when it gives
    none)."""
    infos = await asyncio.get_running_loop().getaddrinfo(name, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def permitted(
    name: str, answers: list[str], *, named: bool, who: str = "rigs", namer: str = "an admin named the host"
) -> list[str]:
    """The answers that may be connected to; ``AddressRefused`` naming the first refused one when none remain.
    ``who`` reach the addresses and ``namer`` is who opens private ones, for the reason given."""
    usable: list[str] = []
    refused: list[tuple[str, str]] = []  # (the answer, why not)
    for answer in answers:
        try:
            address = ipaddress.ip_address(answer)
        except ValueError:
            refused.append((repr(answer), "which is not an address"))
            continue
        why = refusal(address, named=named)
        if why is None:
            usable.append(answer)
        elif refusal(address, named=True) is None:
            refused.append((answer, f"{why}, which {who} reach only when {namer}"))
        else:
            refused.append((answer, f"{why}, which {who} never reach"))
    if usable:
        return usable
    if not refused:
        raise AddressRefused(f"{name} resolves to no address")
    answer, why = refused[0]
    more = f" ({len(refused) - 1} more addresses refused too)" if len(refused) > 1 else ""
    if answers == [name]:  # an address given as such, not a name
        raise AddressRefused(f"{name} is {why}{more}")
    raise AddressRefused(f"{name} resolves to {answer}, {why}{more}")
