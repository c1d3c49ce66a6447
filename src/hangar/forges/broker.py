"""The credential broker: short-lived forge tokens for confined code, only for hosts its enclosure reaches.

A token is minted for one need (a shell step, a command agent's run) and ended with it: a GitHub App installation
token narrowed to the named repositories and ``github.STEP_PERMISSIONS``, revoked when the step or run ends (it
would expire within the hour anyway). Refused, each with its reason: no forge connected, a repo not linked to the
forge, the enclosure's egress allowlist not reaching the forge's host (the allowlist the enclosure boots with,
``Confinement.reaches``), a token connection (a token cannot be narrowed or ended).

Shell steps ask through their ``repoIds``, command agents through their adapter's ``forgeRepos`` (for the whole
run): with none, nothing is asked. The program's environment then holds ``GH_TOKEN`` and ``GITHUB_TOKEN`` (the
gh CLI's and most tools' names), ``GH_HOST`` (the forge's host, for gh on GitHub Enterprise Server) and a git
credential helper, set through git's ``GIT_CONFIG_*`` variables, that answers with the token for the forge's host
only. The token is a secret of the step or run: ``[redacted]`` in its output and error (``hangar.core.redact``);
it is never logged, audited or put in an event.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass

from hangar.core.brokering import BrokeredEnv, CredentialSource, HeldToken, forge_env, not_reached
from hangar.core.confine import Confinement, Scope
from hangar.core.context import AppContext
from hangar.errors import InvalidArgs, Refused
from hangar.forges import github
from hangar.forges.reach import Route
from hangar.forges.service import TOKEN_NOT_BROKERED, ForgeService
from hangar.forges.store import ForgeConnection
from hangar.pipelines import RepoCredentials, ShellEnvironment
from hangar.workspace import RepoService

log = logging.getLogger("hangar.forges")

Reaches = Callable[[str], Awaitable[bool]]
Brokered = HeldToken


class CredentialBroker:
    def __init__(self, app: AppContext) -> None:
        self._app = app

    @contextlib.asynccontextmanager
    async def token(self, workspace_id: str, repo_refs: Sequence[str], reaches: Reaches) -> AsyncIterator[Brokered]:
        """A token for the workspace repos ``repo_refs`` (ids or names), revoked when the block ends."""
        connection, names = await self._linked(workspace_id, repo_refs)
        if not await reaches(connection.host):
            raise not_reached(connection.host)
        _mintable(connection, names)
        route = await self._app.service(ForgeService).route(connection)  # checked now; revoked through the same
        async with github.minted_for(connection, names, route, github.STEP_PERMISSIONS) as minted:
            yield Brokered(minted.token, connection.host, tuple(names), minted.expires_at)

    async def mint(self, workspace_id: str, repo_refs: Sequence[str]) -> Brokered:
        """The same token for a worker's program, whose worker checks its enclosure reaches the host and ends it
        with ``revoke`` (the caller checked the worker holds the claim it is for)."""
        connection, names = await self._linked(workspace_id, repo_refs)
        _mintable(connection, names)
        route = await self._app.service(ForgeService).route(connection)
        minted = await github.mint_for(connection, names, route, github.STEP_PERMISSIONS)
        return Brokered(minted.token, connection.host, tuple(names), minted.expires_at)

    async def revoke(self, workspace_id: str, token: str) -> None:
        """End a token ``mint`` gave, through the workspace's connection as it is now (none, or a token
        connection: nothing this broker minted can be live under it, nothing is asked)."""
        forges = self._app.service(ForgeService)
        connection = forges.connection(await forges.workspace(workspace_id))
        if connection is None or connection.kind != "app":
            return
        await github.revoke(connection, token, await forges.route(connection))

    async def _linked(self, workspace_id: str, repo_refs: Sequence[str]) -> tuple[ForgeConnection, list[str]]:
        forges = self._app.service(ForgeService)
        ws = await forges.workspace(workspace_id)
        connection = forges.required(ws)
        repos = self._app.service(RepoService)
        return connection, [await forges.link_of(ws, connection, await repos.get(ws.id, ref)) for ref in repo_refs]


def _mintable(connection: ForgeConnection, names: Sequence[str]) -> None:
    if connection.kind != "app":
        raise Refused(TOKEN_NOT_BROKERED, detail_code="forgeTokenNotBrokered")
    owners = {n.split("/", 1)[0].lower() for n in names}
    if len(owners) != 1:
        raise InvalidArgs("one token covers repositories of one owner: name repos of one account", field="repoIds")


# What the server's own review calls need: comment on and review pull requests, nothing else.
REVIEW_PERMISSIONS: dict[str, str] = {"pull_requests": "write", "metadata": "read"}


@dataclass(frozen=True)
class ServerToken:
    """A token for a call the server itself makes (a review the ``forge.prComment`` body posts)."""

    connection: ForgeConnection
    token: str
    route: Route
    full_name: str


@contextlib.asynccontextmanager
async def server_token(app: AppContext, workspace_id: str, full_name: str) -> AsyncIterator[ServerToken]:
    """A token for the server's own calls on ``full_name``, which must be a repository a workspace repo links to:
    an app's installation token narrowed to it and to ``REVIEW_PERMISSIONS``, revoked when the block ends; a
    token connection's token as it is (it never leaves the server). Refused: no forge, a repository not linked."""
    forges = app.service(ForgeService)
    ws = await forges.workspace(workspace_id)
    connection = forges.required(ws)
    linked = {k.full_name.lower(): k.full_name for k in await forges.links(ws, connection)}
    name = linked.get(full_name.lower())
    if name is None:
        raise Refused(
            f"{full_name} is not linked to a repo of this workspace on {connection.host}: add the repo and link it "
            "(forge.linkRepo)",
            detail_code="repoNotLinked",
        )
    route = await forges.route(connection)
    if connection.kind == "token":
        assert connection.token is not None
        yield ServerToken(connection, connection.token, route, name)
        return
    async with github.minted_for(connection, [name], route, REVIEW_PERMISSIONS) as minted:
        yield ServerToken(connection, minted.token, route, name)


class ForgeCredentials(CredentialSource):
    """The broker as the kernel's ``CredentialSource``: what command agents that name ``forgeRepos`` get."""

    def __init__(self, app: AppContext) -> None:
        self._broker = CredentialBroker(app)

    @contextlib.asynccontextmanager
    async def environment(
        self, workspace_id: str, repo_refs: Sequence[str], confinement: Confinement, scope: Scope
    ) -> AsyncIterator[BrokeredEnv]:
        async def reaches(host: str) -> bool:
            return await confinement.reaches(scope, host)

        async with self._broker.token(workspace_id, repo_refs, reaches) as brokered:
            yield BrokeredEnv(forge_env(brokered.token, brokered.host), secrets=(brokered.token,))

    async def mint(self, workspace_id: str, repo_refs: Sequence[str]) -> HeldToken:
        return await self._broker.mint(workspace_id, repo_refs)

    async def revoke(self, workspace_id: str, token: str) -> None:
        await self._broker.revoke(workspace_id, token)


def forge_shell_environment(app: AppContext) -> ShellEnvironment:
    """A forge token for each shell step that names ``repoIds``, for the step's run and revoked at its end."""
    credentials = ForgeCredentials(app)
    return RepoCredentials(lambda _step: credentials)
