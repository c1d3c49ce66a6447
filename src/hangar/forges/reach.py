"""Where the server may reach a forge's API, decided by who connected it, and how every call is held to it.

Connecting a forge makes the server send requests (the connection's check, the status, minting and revoking
tokens) from this machine's place in the network to the connection's API address, so the address is held to the
rules of the other addresses the server reaches for someone (``hangar.core.addresses``), as a workspace admin's
model endpoints are (``hangar.agents.endpoints``):

- a connection the server owner made reaches any address, as any program of the owner's would;
- a workspace admin's: the API's host is resolved and every answer checked: never loopback, this host's own
  addresses, link-local and the metadata services, the private network;
- unless the server owner names the host in ``trustedForgeHosts`` (``hangar admin trusted-forge-hosts``), with a port
  or for all its ports: then private addresses and this host's loopback and own addresses too (a GitHub Enterprise
  Server on the LAN or on this machine), never link-local or metadata, never a port this server listens on;
- each call connects to exactly an address checked for it (the name kept for the ``Host`` header and for TLS),
  with no proxy from the environment and no redirect followed. The rules are applied when the connection is made
  and again before each later use: DNS and the setting may have changed since; a token is revoked through the
  address it was minted through.
"""

from __future__ import annotations

import functools
import ssl
from dataclasses import dataclass

import httpx

from hangar.core.addresses import (
    AddressRefused,
    HostUnresolved,
    checked,
    host_list,
    is_literal,
    listed_host,
    server_ports,
)
from hangar.core.context import AppContext
from hangar.core.settings import SettingSpec
from hangar.errors import Forbidden, InvalidArgs, Refused
from hangar.identity import IdentityService

SETTING_TRUSTED_FORGE_HOSTS = "trustedForgeHosts"
TRUSTED_FORGE_HOSTS_FIX = "hangar admin trusted-forge-hosts <host>[:<port>]..."
MAX_TRUSTED_FORGE_HOSTS = 32

TRUSTED_FORGE_HOSTS_SPEC = SettingSpec(
    SETTING_TRUSTED_FORGE_HOSTS,
    "Hosts (each with an optional :port) whose forge API workspace admins' forge connections may reach at private "
    "addresses and at this host's loopback and own addresses, never at a port this server listens on (the server "
    "owner's connections reach any).",
    host_list(SETTING_TRUSTED_FORGE_HOSTS, MAX_TRUSTED_FORGE_HOSTS, ports=True),
)


@functools.cache
def tls_context(*, trust_env: bool) -> ssl.SSLContext:
    """The trust store forge calls verify certificates against, built once per process (as httpx builds it, with or
    without ``SSL_CERT_FILE``/``SSL_CERT_DIR`` from the environment): reading the CA bundle again for every
    client took about 75 ms of the 90 ms a client took to make, and a review's step makes six."""
    return httpx.create_ssl_context(trust_env=trust_env)


@dataclass(frozen=True)
class Route:
    """How calls reach a forge's API: ``addresses`` None for the server owner's connection (any), else the
    addresses checked for ``host`` at ``port``, the only ones connected to."""

    host: str = ""
    port: int = 0
    addresses: tuple[str, ...] | None = None

    def transport(self) -> httpx.AsyncBaseTransport | None:
        return None if self.addresses is None else PinnedTransport(self)


OWNERS = Route()


class PinnedTransport(httpx.AsyncBaseTransport):
    """Sends each request to an address of its route (the next when one refuses the connection, nothing being
    sent), TLS still naming and checking the host; refuses a request for any other host."""

    def __init__(self, route: Route) -> None:
        assert route.addresses
        self._route = route
        self._inner = httpx.AsyncHTTPTransport(trust_env=False, verify=tls_context(trust_env=False))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        host = request.url.raw_host.decode("ascii")
        port = request.url.port or (443 if request.url.scheme == "https" else 80)
        if host != self._route.host or port != self._route.port:
            raise httpx.ConnectError(f"{host}:{port} is not the forge's API address checked for this call")
        addresses = self._route.addresses or ()
        tls_name = request.url.scheme == "https" and not is_literal(host)
        for n, address in enumerate(addresses):
            pinned = httpx.Request(
                request.method,
                request.url.copy_with(host=address),
                headers=request.headers,  # its Host header names the host, not the address
                stream=request.stream,
                extensions={**request.extensions, **({"sni_hostname": host} if tls_name else {})},
            )
            try:
                return await self._inner.handle_async_request(pinned)
            except httpx.ConnectError:
                if n == len(addresses) - 1:
                    raise
        raise httpx.ConnectError("no address")  # not reached: a route holds at least one address

    async def aclose(self) -> None:
        await self._inner.aclose()


async def _trusted(app: AppContext) -> list[str]:
    """``trustedForgeHosts`` as stored, read at every use: the command line may change it while the server runs."""
    value = await app.service(IdentityService).get_setting(SETTING_TRUSTED_FORGE_HOSTS)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _where(api_url: str) -> tuple[str, int]:
    url = httpx.URL(api_url)
    return url.raw_host.decode("ascii"), url.port or (443 if url.scheme == "https" else 80)


async def admins_route(app: AppContext, api_url: str) -> Route:
    """The addresses a workspace admin's connection may reach ``api_url`` at now: ``AddressRefused`` or
    ``HostUnresolved``."""
    host, port = _where(api_url)
    named = listed_host(await _trusted(app), host, port, ports=True)
    found = await checked(
        host,
        port,
        named=named,
        local=True,
        own_ports=server_ports(app.settings),
        who="a workspace admin's forge connections",
        namer=f"the server owner names the host ({TRUSTED_FORGE_HOSTS_FIX})",
    )
    return Route(host, port, tuple(found))


async def connecting(app: AppContext, api_url: str, *, by_owner: bool, field: str) -> Route:
    """The route of a connection being made: ``Forbidden`` naming ``field`` when the rules refuse its address,
    ``InvalidArgs`` when its host does not resolve."""
    if by_owner:
        return OWNERS
    try:
        return await admins_route(app, api_url)
    except HostUnresolved as exc:
        raise InvalidArgs(f"{field}: the host of {api_url} does not resolve ({exc.reason})", field=field) from None
    except AddressRefused as exc:
        raise Forbidden(
            f"{field}: {api_url} is not reached from this server for a workspace admin's forge connection: "
            f"{exc.reason} (the server owner's connections reach any address)"
        ) from None


async def route(app: AppContext, api_url: str, *, by_owner: bool) -> Route:
    """The route of a later call through a stored connection, checked again now: ``Refused`` when the rules
    refuse it today."""
    if by_owner:
        return OWNERS
    try:
        return await admins_route(app, api_url)
    except HostUnresolved as exc:
        raise Refused(f"the forge {api_url} is unreachable: its host does not resolve ({exc.reason})") from None
    except AddressRefused as exc:
        raise Refused(f"the forge {api_url} is not reached from this server: {exc.reason}") from None
