"""Where an agent's model endpoint may be reached, decided by who configured it, and how each turn is held to it.

An ``openai`` agent's turns are requests the server makes, from this machine's place in the network (its loopback,
its own addresses, the private network, the cloud's metadata service), to the adapter's ``baseUrl``, with the
agent's API key, and the answer flows back into the run. An endpoint the server owner configured reaches anything,
as any program of the owner's would (the runner's shared client, proxies from the environment honoured). A
workspace admin's reaches what the rest of the internet may:

- its host is resolved here and every answer checked against the kernel's address rules (``hangar.core.addresses``):
  never loopback, this host's own addresses, link-local and metadata, the private network;
- unless the server owner names the host in ``trustedModelHosts`` (``hangar admin trusted-model-hosts``), with a
  port or for all its ports: then private addresses, and this host's loopback and own addresses too (a model served
  on this machine, Ollama or vLLM, is the ordinary self-hosted case), but never link-local or metadata, and never
  a port this server listens on (``server_ports``: its own API is nobody's model);
- the request goes to exactly an address checked (the URL names the address; the name is kept for the ``Host``
  header and for TLS, whose server name and certificate check stay the name's), through a client of the run's own
  that reads no proxy from the environment (a proxy would resolve the name again). No redirect is followed, for
  anyone: the adapter says where it led.

The rules are applied when the agent is saved and again at every turn: DNS and the setting may have changed since.
Who configured the endpoint is recorded with the agent (``endpoint_by_owner``): the server owner saving the
adapter makes it the owner's; a workspace admin saving it makes it an admin's, unless the ``baseUrl`` stays the
same (the admin then changed other settings of an endpoint someone else chose).
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

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
from hangar.errors import Forbidden, InvalidArgs
from hangar.identity import IdentityService

SETTING_TRUSTED_MODEL_HOSTS = "trustedModelHosts"
TRUSTED_MODEL_HOSTS_FIX = "hangar admin trusted-model-hosts <host>[:<port>]..."
MAX_TRUSTED_MODEL_HOSTS = 32
FIELD = "adapter.baseUrl"

TRUSTED_MODEL_HOSTS_SPEC = SettingSpec(
    SETTING_TRUSTED_MODEL_HOSTS,
    "Hosts (each with an optional :port) the model endpoints of workspace admins' agents may reach at private "
    "addresses and at this host's loopback and own addresses, never at a port this server listens on (the server "
    "owner's agents reach any).",
    host_list(SETTING_TRUSTED_MODEL_HOSTS, MAX_TRUSTED_MODEL_HOSTS, ports=True),
)


class EndpointError(Exception):
    """The model endpoint failed or may not be reached; the message is safe to show (it never carries the API
    key)."""


@dataclass(frozen=True)
class Target:
    """Where a turn's request goes: its URL and the host and port it connects to."""

    url: httpx.URL
    port: int

    @property
    def host(self) -> str:
        """The host as it is looked up and sent (a name in its ASCII form, IDNA for other letters)."""
        return self.url.raw_host.decode("ascii")

    @property
    def tls_name(self) -> bool:
        """Whether TLS must be told the host's name: an https URL naming its host (not an address)."""
        return self.url.scheme == "https" and not is_literal(self.host)

    @classmethod
    def of(cls, base_url: str, path: str = "") -> Target:
        """``base_url`` (with ``path`` appended) taken apart as the HTTP client reads it; ``ValueError`` saying
        what is wrong."""
        try:
            url = httpx.URL(base_url + path)
        except httpx.InvalidURL as exc:
            raise ValueError(f"{base_url} is not a URL ({exc})") from None
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"{base_url} must be an http:// or https:// URL with a host")
        port = url.port or (443 if url.scheme == "https" else 80)
        if not 0 < port < 65536:
            raise ValueError(f"the port of {base_url} must be from 1 to 65535")
        return cls(url, port)


async def _trusted(app: AppContext) -> list[str]:
    """``trustedModelHosts`` as stored, read at every use: the command line may change it while the server runs."""
    value = await app.service(IdentityService).get_setting(SETTING_TRUSTED_MODEL_HOSTS)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


async def admins_addresses(app: AppContext, target: Target) -> list[str]:
    """The addresses a workspace admin's endpoint at ``target`` may be reached at now, every answer checked:
    ``AddressRefused`` or ``HostUnresolved``."""
    named = listed_host(await _trusted(app), target.host, target.port, ports=True)
    return await checked(
        target.host,
        target.port,
        named=named,
        local=True,
        own_ports=server_ports(app.settings),
        who="a workspace admin's model endpoints",
        namer=f"the server owner names the host ({TRUSTED_MODEL_HOSTS_FIX})",
    )


async def check_saved(app: AppContext, base_url: str) -> None:
    """Refuse a workspace admin's ``baseUrl`` the rules do not let the server reach (``Forbidden`` naming
    ``adapter.baseUrl``), or whose host does not resolve (``InvalidArgs``)."""
    try:
        await admins_addresses(app, Target.of(base_url))
    except ValueError as exc:
        raise InvalidArgs(f"{FIELD}: {exc}", field=FIELD) from None
    except HostUnresolved as exc:
        host = Target.of(base_url).host
        raise InvalidArgs(
            f"{FIELD}: the host {host} of {base_url} does not resolve ({exc.reason})", field=FIELD
        ) from None
    except AddressRefused as exc:
        raise Forbidden(
            f"{FIELD}: {base_url} is not reached from this server for a workspace admin's agent: {exc.reason} "
            "(the server owner's agents reach any address)"
        ) from None


class ModelEndpoint:
    """How one run's turns reach its agent's model endpoint: the server owner's through the runner's shared client,
    a workspace admin's checked at every turn and through a client of the run's own, held to the address checked.
    ``aclose`` when the run is over."""

    def __init__(
        self, app: AppContext, base_url: str, *, by_owner: bool, shared: httpx.AsyncClient, tls: ssl.SSLContext
    ) -> None:
        self._app = app
        self._base_url = base_url
        self._by_owner = by_owner
        self._shared = shared
        self._tls = tls
        self._own: httpx.AsyncClient | None = None

    @asynccontextmanager
    async def post(
        self, path: str, *, json: Any, headers: dict[str, str], limits: httpx.Timeout
    ) -> AsyncIterator[httpx.Response]:
        """A streamed response to ``POST {baseUrl}{path}`` (``EndpointError`` when the rules refuse it; the
        client's ``httpx.HTTPError`` when it fails)."""
        if self._by_owner:
            async with self._shared.stream(
                "POST", f"{self._base_url}{path}", json=json, headers=headers, timeout=limits
            ) as answer:
                yield answer
            return
        target, addresses = await self._check(path)
        if self._own is None:
            # No proxy from the environment (it would resolve the name again), no redirect followed.
            self._own = httpx.AsyncClient(trust_env=False, verify=self._tls, follow_redirects=False)
        resp: httpx.Response | None = None
        for n, address in enumerate(addresses):
            request = self._own.build_request(
                "POST",
                target.url.copy_with(host=address),
                json=json,
                headers={**headers, "Host": target.url.netloc.decode("ascii")},
                timeout=limits,
                # TLS names the host and checks its certificate against the name, not the address.
                extensions={"sni_hostname": target.host} if target.tls_name else {},
            )
            try:
                resp = await self._own.send(request, stream=True)
                break
            except httpx.ConnectError:  # nothing was sent: the next address checked may answer
                if n == len(addresses) - 1:
                    raise
        assert resp is not None
        try:
            yield resp
        finally:
            await resp.aclose()

    async def _check(self, path: str) -> tuple[Target, list[str]]:
        try:
            target = Target.of(self._base_url, path)
            return target, await admins_addresses(self._app, target)
        except ValueError as exc:
            raise EndpointError(f"the model endpoint cannot be reached: {exc}") from None
        except HostUnresolved as exc:
            raise EndpointError(
                f"the model endpoint {self._base_url} is unreachable: its host does not resolve ({exc.reason})"
            ) from None
        except AddressRefused as exc:
            raise EndpointError(
                f"the model endpoint {self._base_url} is not reached from this server: {exc.reason}"
            ) from None

    async def aclose(self) -> None:
        if self._own is not None:
            await self._own.aclose()
            self._own = None
