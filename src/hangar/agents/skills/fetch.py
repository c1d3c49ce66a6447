"""Downloads of discovery indexes and skills, held to the server's outbound rules (``hangar.core.addresses``).

A skill the server owner installs is fetched as any program of the owner's would fetch it. A workspace admin's is
fetched from this machine's place in the network on the admin's word, so like an admin's clone
(``hangar.workspace.sources``): the host is resolved here and every answer checked (never loopback, this host's
own addresses, link-local and the metadata services; the private network only for a host the server owner names
in ``trustedRepoHosts``), and the request goes to exactly an address checked, the name kept for ``Host`` and TLS.
For everyone: no proxy from the environment, no redirect followed (the refusal says where it led), a time bound,
and at most ``limit`` bytes read.
"""

from __future__ import annotations

import functools
import ssl

import httpx

from hangar.agents.endpoints import Target
from hangar.core.addresses import AddressRefused, HostUnresolved, checked
from hangar.core.context import AppContext
from hangar.errors import Forbidden, InvalidArgs
from hangar.workspace import TRUSTED_REPO_HOSTS_FIX, trusted_repo_hosts

FETCH_TIME_S = 30.0


@functools.cache
def _tls() -> ssl.SSLContext:
    """The system's verifying context, made on the first download: making it loads the CA bundle, which a server's
    start need not pay for."""
    return ssl.create_default_context()


async def _addresses(app: AppContext, target: Target, field: str, url: str) -> list[str]:
    named = target.host.lower() in await trusted_repo_hosts(app)
    try:
        return await checked(
            target.host,
            target.port,
            named=named,
            who="a workspace admin's skill downloads",
            namer=f"the server owner names the host ({TRUSTED_REPO_HOSTS_FIX})",
        )
    except HostUnresolved as exc:
        raise InvalidArgs(
            f"{field}: the host {target.host} of {url} does not resolve ({exc.reason})", field=field
        ) from None
    except AddressRefused as exc:
        raise Forbidden(f"{field}: {url} is not reached from this server: {exc.reason}") from None


async def fetch(app: AppContext, url: str, *, by_owner: bool, limit: int, field: str) -> bytes:
    """The body of ``GET url`` (at most ``limit`` bytes); ``InvalidArgs`` or ``Forbidden`` naming ``field``."""
    try:
        target = Target.of(url)
    except ValueError as exc:
        raise InvalidArgs(f"{field}: {exc}", field=field) from None
    addresses = [target.host] if by_owner else await _addresses(app, target, field, url)
    timeout = httpx.Timeout(FETCH_TIME_S)
    async with httpx.AsyncClient(trust_env=False, verify=_tls(), follow_redirects=False, timeout=timeout) as client:
        for n, address in enumerate(addresses):
            request = client.build_request(
                "GET",
                target.url.copy_with(host=address),
                headers={"Host": target.url.netloc.decode("ascii"), "Accept": "application/json, */*"},
                extensions={"sni_hostname": target.host} if target.tls_name and not by_owner else {},
            )
            try:
                resp = await client.send(request, stream=True)
            except httpx.ConnectError:
                if n < len(addresses) - 1:
                    continue  # nothing was sent: the next address checked may answer
                raise InvalidArgs(f"{field}: {url} could not be reached", field=field) from None
            except httpx.HTTPError as exc:
                raise InvalidArgs(f"{field}: {url} could not be fetched ({type(exc).__name__})", field=field) from None
            try:
                if resp.is_redirect:
                    where = resp.headers.get("location", "?")
                    raise InvalidArgs(f"{field}: {url} redirects to {where}, which is not followed", field=field)
                if resp.status_code != 200:
                    raise InvalidArgs(f"{field}: {url} answered HTTP {resp.status_code}", field=field)
                body = bytearray()
                try:
                    async for chunk in resp.aiter_bytes():
                        body += chunk
                        if len(body) > limit:
                            raise InvalidArgs(f"{field}: {url} is larger than {limit} bytes", field=field)
                except httpx.HTTPError as exc:
                    raise InvalidArgs(
                        f"{field}: {url} failed mid-download ({type(exc).__name__})", field=field
                    ) from None
                return bytes(body)
            finally:
                await resp.aclose()
    raise InvalidArgs(f"{field}: {url} could not be reached", field=field)
