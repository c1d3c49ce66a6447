"""GitHub's REST API through githubkit (typed requests and responses): what the forge part asks of it.

A client is made for one call from the connection read just then (no token, JWT or answer is kept between calls,
so a connection changed or removed by another process counts at once), through the route the caller checked
(``hangar.forges.reach``: a workspace admin's connection connects only to the addresses checked for it). An app
authenticates with a JWT signed by its private key; a short-lived installation token is asked for one
installation, narrowed to the named repositories and permissions, and revoked with itself. What GitHub refuses
becomes ``Refused`` naming the status and GitHub's message; a forge out of reach or answering 5xx becomes
``Unavailable``. No error carries a credential.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from hangar.errors import HangarError, InvalidArgs, Refused, Unavailable
from hangar.forges.reach import Route, tls_context
from hangar.forges.store import ForgeConnection

if TYPE_CHECKING:
    # githubkit (with its JWT, HTTP cache and pydantic models) is imported by the calls themselves: most servers
    # never call a forge, and it was a good share of a server's start.
    from githubkit import AppAuthStrategy, GitHub, TokenAuthStrategy
    from githubkit.exception import RequestFailed

log = logging.getLogger(__name__)

TIMEOUT_S = 20.0
# What a shell step's token may do: read and push code, open and update pull requests. Nothing else the app holds.
STEP_PERMISSIONS: dict[str, str] = {"contents": "write", "pull_requests": "write", "metadata": "read"}


@dataclass(frozen=True)
class Installation:
    id: int
    account: str
    repository_selection: str


@dataclass(frozen=True)
class InstallationToken:
    token: str
    expires_at: datetime


def check_private_key(pem: str) -> str:
    """The app's private key as given, when it is an RSA private key in PEM (what GitHub issues)."""
    try:
        key = load_pem_private_key(pem.strip().encode(), password=None)
    except (ValueError, TypeError):
        raise InvalidArgs("privateKey is not a PEM private key (GitHub's .pem file)", field="privateKey") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise InvalidArgs("privateKey is not an RSA key: GitHub apps sign with RSA", field="privateKey")
    return pem.strip() + "\n"


def client(api_url: str, auth: AppAuthStrategy | TokenAuthStrategy, route: Route) -> GitHub[Any]:
    """A client for one call; a workspace admin's connection's held to the addresses of ``route`` (no proxy from
    the environment, no redirect followed: either would reach a host nobody checked)."""
    from githubkit import GitHub
    from githubkit.cache import MemCacheStrategy

    pinned = route.transport()
    return GitHub(
        auth,
        base_url=api_url.rstrip("/") + "/",
        timeout=TIMEOUT_S,
        cache_strategy=MemCacheStrategy(),  # this call's own: a JWT never outlives the connection it was signed for
        http_cache=False,
        auto_retry=False,
        user_agent="Hangar",
        follow_redirects=pinned is None,
        trust_env=pinned is None,
        ssl_verify=tls_context(trust_env=pinned is None),
        async_transport=pinned,
    )


def token_client(api_url: str, token: str, route: Route) -> GitHub[Any]:
    """``client`` acting with ``token`` (a token connection's, or an installation token)."""
    from githubkit import TokenAuthStrategy

    return client(api_url, TokenAuthStrategy(token), route)


def _app_auth(connection: ForgeConnection) -> AppAuthStrategy:
    from githubkit import AppAuthStrategy

    assert connection.app_id is not None and connection.private_key is not None
    return AppAuthStrategy(connection.app_id, connection.private_key)


@asynccontextmanager
async def calling(what: str, host: str) -> AsyncIterator[None]:
    from githubkit.exception import GitHubException, RequestError, RequestFailed

    try:
        yield
    except RequestFailed as exc:
        status = exc.response.status_code
        message = _message(exc)
        if status >= 500:  # the forge failed, it did not say no: asking again later may work
            raise Unavailable(f"{host} failed to {what} ({status}{': ' + message if message else ''})") from None
        raise Refused(f"{host} refused to {what} ({status}{': ' + message if message else ''})") from None
    except RequestError as exc:
        raise Unavailable(f"{host} could not be reached to {what}: {type(exc.exc).__name__}") from None
    except GitHubException as exc:
        raise Refused(f"could not {what} on {host}: {type(exc).__name__}") from None


def _message(exc: RequestFailed) -> str:
    try:
        body = exc.response.raw_response.json()
    except ValueError:
        return ""
    return str(body.get("message", ""))[:200] if isinstance(body, dict) else ""


async def list_installations(connection: ForgeConnection, route: Route) -> list[Installation]:
    """The app's installations (the accounts it is installed on); the JWT check of the app's credentials."""
    async with (
        client(connection.api_url, _app_auth(connection), route) as gh,
        calling("list the app's installations", connection.host),
    ):
        found = await gh.rest.apps.async_list_installations(per_page=100)
        return [Installation(i.id, _account_name(i.account), i.repository_selection) for i in found.parsed_data]


async def authenticated_login(connection: ForgeConnection, route: Route) -> str:
    """Whose token it is (its login); the check of a token connection."""
    assert connection.token is not None
    async with (
        token_client(connection.api_url, connection.token, route) as gh,
        calling("identify the token", connection.host),
    ):
        return str((await gh.rest.users.async_get_authenticated()).parsed_data.login)


async def own_login(connection: ForgeConnection, route: Route) -> str:
    """The account the server's own calls act as: a token connection's owner, an app's bot (``<slug>[bot]``, the
    login GitHub gives what an installation token writes)."""
    if connection.kind == "token":
        return await authenticated_login(connection, route)
    async with (
        client(connection.api_url, _app_auth(connection), route) as gh,
        calling("identify the app", connection.host),
    ):
        slug = (await gh.rest.apps.async_get_authenticated()).json().get("slug")
    if not isinstance(slug, str) or not slug:
        raise Refused(f"{connection.host} did not name the app (no slug)")
    return f"{slug}[bot]"


async def repo_installation(connection: ForgeConnection, full_name: str, route: Route) -> Installation:
    """The app's installation on a repository (``Refused`` when the app is not installed there)."""
    owner, name = full_name.split("/", 1)
    async with (
        client(connection.api_url, _app_auth(connection), route) as gh,
        calling(f"find the app's installation on {full_name}", connection.host),
    ):
        i = (await gh.rest.apps.async_get_repo_installation(owner, name)).parsed_data
        return Installation(i.id, _account_name(i.account), i.repository_selection)


async def mint(
    connection: ForgeConnection,
    installation_id: int,
    repositories: Sequence[str],
    route: Route,
    *,
    permissions: dict[str, str] | None = None,
) -> InstallationToken:
    """A new installation token for ``repositories`` (names within the installation) and ``permissions``
    (``STEP_PERMISSIONS`` unless named)."""
    async with (
        client(connection.api_url, _app_auth(connection), route) as gh,
        calling("mint an installation token", connection.host),
    ):
        answer = await gh.rest.apps.async_create_installation_access_token(
            installation_id,
            repositories=list(repositories),
            permissions=dict(permissions or STEP_PERMISSIONS),
        )
        return InstallationToken(answer.parsed_data.token, answer.parsed_data.expires_at)


async def revoke(connection: ForgeConnection, token: str, route: Route) -> None:
    """End an installation token before its hour is up."""
    async with (
        token_client(connection.api_url, token, route) as gh,
        calling("revoke an installation token", connection.host),
    ):
        await gh.rest.apps.async_revoke_installation_access_token()


async def mint_for(
    connection: ForgeConnection, names: Sequence[str], route: Route, permissions: dict[str, str]
) -> InstallationToken:
    """A new installation token for the repositories ``names`` (``owner/name``, one owner) and ``permissions``,
    found through the installation on the first of them; the caller revokes it."""
    installation = await repo_installation(connection, names[0], route)
    return await mint(connection, installation.id, [n.split("/", 1)[1] for n in names], route, permissions=permissions)


@asynccontextmanager
async def minted_for(
    connection: ForgeConnection, names: Sequence[str], route: Route, permissions: dict[str, str]
) -> AsyncIterator[InstallationToken]:
    """An installation token for the repositories ``names`` (``owner/name``, one owner) and ``permissions``,
    revoked when the block ends, however it ends (a revocation that fails is logged: the token ends within the
    hour anyway, and what was done with it stands)."""
    minted = await mint_for(connection, names, route, permissions)
    try:
        yield minted
    finally:
        try:
            await revoke(connection, minted.token, route)
        except HangarError as exc:
            log.warning("a token for %s on %s was not revoked: %s", ", ".join(names), connection.host, exc.message)


def _account_name(account: Any) -> str:
    """An installation's account: a user or organization (``login``) or an enterprise (``slug``)."""
    return str(getattr(account, "login", None) or getattr(account, "slug", None) or "")
