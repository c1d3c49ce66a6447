"""Which addresses the server may connect to on someone else's behalf, checked after resolving a name and before
connecting to exactly that address (so a name that answers differently the second time, DNS rebinding, gains
nothing). One table for every such connection: a rig's egress gate (``hangar.rigs.egress``), the clones and
fetches of a workspace admin's repos (``hangar.workspace.sources``) and the model endpoints of a workspace admin's
agents (``hangar.agents.endpoints``).

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
  is the server owner, through the ``trustedRepoHosts`` server setting;
- for a caller whose naming opens this host too (``local``: the server owner naming a model server for admins'
  agents, ``trustedModelHosts``, since a model served on this machine's loopback is the ordinary self-hosted
  case): loopback and this host's own addresses when the host is named, but never at a port the server itself
  listens on (``server_ports``), which would hand the server's own API the caller's request.

Host lists such settings hold are checked and compared here too (``host_key``, ``host_list``, ``listed_host``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import re
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from hangar.config import Settings
from hangar.errors import InvalidArgs

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Table = tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...]

_NEVER: tuple[tuple[str, str], ...] = (
    ("169.254.169.254/32", "the cloud metadata service"),
    ("100.100.100.200/32", "a cloud metadata service"),
    ("fd00:ec2::254/128", "the cloud metadata service"),
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
# Looked up before ``NEVER``, whose ``::/8`` holds ``::1``.
_LOOPBACK: tuple[tuple[str, str], ...] = (("127.0.0.0/8", "a loopback address"), ("::1/128", "a loopback address"))
LOOPBACK: Table = tuple((ipaddress.ip_network(net), why) for net, why in _LOOPBACK)
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


def this_host(address: IPAddress) -> str | None:
    """What ``address`` is when a packet to it never leaves this host (a loopback address, one of this host's
    own), else None. An IPv6 address carrying an IPv4 one is judged as that IPv4 address too."""
    judged = _carried(address) or address
    loopback = _listed(judged, LOOPBACK)
    if loopback is not None:
        return loopback
    if _listed(judged, NEVER) is None and (is_host_own(address) or (judged is not address and is_host_own(judged))):
        return "an address of this host"
    return None


def refusal(address: IPAddress, *, named: bool, local: bool = False) -> str | None:
    """Why the server must not connect to ``address`` (None when it may). ``named``: someone the caller trusts
    for it named the host exactly, so it may reach private addresses; ``local``: this host's loopback and own
    addresses too (the caller keeps the server's own ports out, see ``permitted``). An IPv6 address carrying an
    IPv4 one is judged as that IPv4 address, where its packets end up."""
    here = this_host(address)
    if here is not None:
        return None if local else here
    judged = _carried(address) or address
    never = _listed(judged, NEVER)
    if never is not None:
        return never
    private = _listed(judged, PRIVATE)
    if private is not None:
        return None if named else private
    # Nothing broader (``not is_global``): documentation and benchmarking blocks are where some networks put
    # their egress proxy, and a public name resolving there is that network's choice, not the rig's.
    return None


class AddressRefused(Exception):
    """Every address the name resolved to is one the caller may not reach; ``reason`` says which and why (for the
    server's log and an admin's reply), ``told`` says why without the addresses (for whoever only asked for the
    name: the answers of an internal resolver are not theirs to read)."""

    def __init__(self, reason: str, told: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.told = reason if told is None else told


async def resolve(name: str, port: int) -> list[str]:
    """The addresses the host's resolver gives for ``name``, in its order, each once (``OSError`` when it gives
    none)."""
    infos = await asyncio.get_running_loop().getaddrinfo(name, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def permitted(
    name: str,
    answers: list[str],
    *,
    named: bool,
    who: str = "rigs",
    namer: str = "an admin named the host",
    local: bool = False,
    port: int = 0,
    own_ports: frozenset[int] = frozenset(),
) -> list[str]:
    """The answers that may be connected to; ``AddressRefused`` naming the first refused one when none remain.
    ``who`` reach the addresses and ``namer`` is who opens private ones (with ``local``: this host's too, but
    never at ``port`` when it is one of ``own_ports``), for the reason given."""
    usable: list[str] = []
    refused: list[tuple[str, str]] = []  # (the answer, why not)
    for answer in answers:
        try:
            address = ipaddress.ip_address(answer)
        except ValueError:
            refused.append((repr(answer), "which is not an address"))
            continue
        why = refusal(address, named=named, local=local and named)
        here = this_host(address) if local else None
        if here is not None and port in own_ports:  # named or not: the server's own API is nobody's endpoint
            refused.append((answer, f"{here} at port {port}, where this server listens, which {who} never reach"))
        elif why is None:
            usable.append(answer)
        elif refusal(address, named=True, local=local) is None:
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
    raise AddressRefused(f"{name} resolves to {answer}, {why}{more}", f"{name} resolves to {why}")


RESOLVE_LIMIT_S = 30.0  # a resolver that does not answer fails the connection like a host that does not resolve


class HostUnresolved(Exception):
    """The host's resolver gave no address for the name (in time); ``reason`` is its word for it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def checked(
    host: str,
    port: int,
    *,
    named: bool,
    who: str,
    namer: str,
    local: bool = False,
    own_ports: frozenset[int] = frozenset(),
    limit_s: float = RESOLVE_LIMIT_S,
) -> list[str]:
    """The addresses of ``host`` (an address, or a name resolved here once) the caller may connect to at ``port``,
    every answer checked (``permitted``): ``AddressRefused``, or ``HostUnresolved``. Connect to these, never to
    the name again."""
    if is_literal(host):
        answers = [host]
    else:
        try:
            answers = await asyncio.wait_for(resolve(host, port), limit_s)
        except (OSError, TimeoutError) as exc:
            raise HostUnresolved(str(exc) or "no answer in time") from None
    return permitted(host, answers, named=named, who=who, namer=namer, local=local, port=port, own_ports=own_ports)


def server_ports(s: Settings) -> frozenset[int]:
    """The ports the server's own configuration names: its listener, its site and the explicit ports of the
    origins it is reached at."""
    ports = {s.port, *([s.site_port] if s.site_port is not None else [])}
    for url in (s.public_url, s.web_client_url, s.site_url):
        with contextlib.suppress(ValueError):
            port = urlsplit(url).port if url else None
            if port is not None:
                ports.add(port)
    return frozenset(p for p in ports if p)


def is_literal(host: str) -> bool:
    """Whether ``host`` is an IP address (not a name)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def host_key(host: str) -> str:
    """A host as host lists hold it and as it is compared: a lower-case name without a final dot, or an address
    in its canonical form."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return normalize_host(host)


_BRACKETED = re.compile(r"^\[([0-9A-Fa-f:.]+)\](?::(\d{1,5}))?$", re.ASCII)
_WITH_PORT = re.compile(r"^([^:]+):(\d{1,5})$", re.ASCII)


def host_entry(entry: str, *, ports: bool) -> tuple[str, int | None] | None:
    """A host list entry taken apart: its host (``host_key``) and, where ``ports`` allows one, its port (None:
    any); None when it is no such entry. Forms: ``name``, ``1.2.3.4``, ``::1``, and with ``ports``
    ``name:11434``, ``1.2.3.4:11434``, ``[::1]:11434``."""
    host, port = entry.strip(), None
    parts = _BRACKETED.match(host) or (_WITH_PORT.match(host) if ports else None)
    if parts is not None:
        host, port = parts.group(1), (int(parts.group(2)) if parts.group(2) else None)
        if port is not None and not (ports and 0 < port < 65536):
            return None
    key = host_key(host)
    if parts is not None and parts.re is _BRACKETED and ":" not in key:  # brackets hold IPv6 addresses only
        return None
    return (key, port) if is_literal(key) or is_valid_name(key) else None


def host_list(key: str, limit: int, *, ports: bool = False) -> Callable[[Any], list[str]]:
    """A validator for a server setting listing at most ``limit`` hosts (``host_entry``): stored in their
    canonical forms, each once."""
    forms = "host names or IP addresses" + (", each with an optional :port" if ports else "")

    def check(value: Any) -> list[str]:
        wrong = InvalidArgs(f"{key} must be a list of at most {limit} {forms}", field=key)
        if not isinstance(value, list) or len(value) > limit or not all(isinstance(v, str) for v in value):
            raise wrong
        entries = [host_entry(v, ports=ports) for v in value]
        if any(e is None for e in entries):
            raise wrong
        return list(dict.fromkeys(_entry_text(*e) for e in entries if e is not None))

    return check


def _entry_text(host: str, port: int | None) -> str:
    if port is None:
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def listed_host(entries: list[str], host: str, port: int, *, ports: bool = False) -> bool:
    """Whether a host list names ``host`` (at ``port``, or at any port)."""
    key = host_key(host)
    found = (host_entry(e, ports=ports) for e in entries)
    return any(e is not None and e[0] == key and e[1] in (None, port) for e in found)


def git_url_host(url: str) -> str | None:
    """The host of a git remote (``https://host/...``, ``ssh://...``, ``user@host:path``), lower-case; None for a
    local path or ``file://``."""
    if "://" in url:
        return (urlsplit(url).hostname or "").lower() or None
    if ":" in url and "@" in url.split(":", 1)[0]:  # scp-like git@host:path
        return url.split("@", 1)[1].split(":", 1)[0].lower() or None
    return None
