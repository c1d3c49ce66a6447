"""The workspace's forge: connecting, what it is connected as, its repo links, the app's setup link.

A repo links to its forge repository (``owner/name``) by hand (``forge.linkRepo``) or, without that, through the
origin the server recorded when the repo was added, when that origin is on the forge's host. Links are read
from the records each time (the hand-given ones from the workspace database, ``ForgeLinks``): a repo removed from
the workspace links to nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlencode

from hangar.core.context import AppContext
from hangar.errors import InvalidArgs, NotFound, Refused
from hangar.forges import github, reach
from hangar.forges.reach import Route
from hangar.forges.store import (
    FOLDER,
    ForgeConnection,
    ForgeLinks,
    ForgeStore,
    check_full_name,
    full_name_from_origin,
    web_and_api,
)
from hangar.identity import IdentityService, Workspace
from hangar.workspace import Repo, RepoService

NOT_CONNECTED = "no forge is connected to this workspace: a workspace admin connects one (forge.connect)"
TOKEN_NOT_BROKERED = (
    "this workspace's forge is connected with a token, which cannot be narrowed to one repository or ended with "
    "a step: no token is handed to steps. Connect it as a GitHub App for short-lived per-repository tokens"
)
_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
APP_SETUP_PERMISSIONS = {"contents": "write", "pull_requests": "write", "metadata": "read"}


@dataclass(frozen=True)
class Link:
    repo: Repo
    full_name: str
    how: Literal["given", "origin"]


class ForgeService:
    def __init__(self, app: AppContext) -> None:
        self._app = app
        self.store = ForgeStore(app.secret_folder(FOLDER))
        self.given_links = ForgeLinks(app.dbs)

    async def workspace(self, workspace_id: str) -> Workspace:
        """The workspace record an id names: only a found workspace names a directory."""
        found = await self._app.service(IdentityService).get_workspace(workspace_id)
        if found is None:
            raise NotFound(f"workspace {workspace_id} does not exist")
        return found

    def connection(self, ws: Workspace) -> ForgeConnection | None:
        return self.store.read(ws.id)

    def required(self, ws: Workspace) -> ForgeConnection:
        connection = self.store.read(ws.id)
        if connection is None:
            raise Refused(NOT_CONNECTED, detail_code="forgeNotConnected")
        return connection

    async def route(self, connection: ForgeConnection) -> Route:
        """How a call through ``connection`` reaches its API now (``hangar.forges.reach``)."""
        return await reach.route(self._app, connection.api_url, by_owner=connection.by_owner)

    async def connect(
        self,
        ws: Workspace,
        by: str,
        *,
        by_owner: bool,
        base_url: str | None,
        api_url: str | None,
        app_id: int | None,
        private_key: str | None,
        token: str | None,
    ) -> tuple[ForgeConnection, list[github.Installation], str | None]:
        """Check the credentials with the forge, then store them (write-only): an app's (its installations are
        listed with its JWT) or a token's (whose it is). Answers the installations or the token's login."""
        web, api = web_and_api(base_url, api_url)
        now = self._app.clock.now()
        if token and (app_id is not None or private_key):
            raise InvalidArgs("give an app (appId and privateKey) or a token, not both", field="token")
        if token:
            connection = ForgeConnection("token", web, api, now, by, by_owner, token=token.strip())
            route = await self._connecting(connection, api_url)
            login = await github.authenticated_login(connection, route)
            self.store.write(ws.id, connection)
            return connection, [], login
        if app_id is None or not private_key:
            raise InvalidArgs("an app connection needs appId and privateKey (or give a token)", field="appId")
        if app_id <= 0:
            raise InvalidArgs("appId is the app's positive number (its settings page shows it)", field="appId")
        key = github.check_private_key(private_key)
        connection = ForgeConnection("app", web, api, now, by, by_owner, app_id=app_id, private_key=key)
        route = await self._connecting(connection, api_url)
        installations = await github.list_installations(connection, route)
        self.store.write(ws.id, connection)
        return connection, installations, None

    async def _connecting(self, connection: ForgeConnection, api_url: str | None) -> Route:
        """The route the connection's check goes through, its address checked (and held to) now."""
        field = "apiUrl" if api_url else "baseUrl"
        return await reach.connecting(self._app, connection.api_url, by_owner=connection.by_owner, field=field)

    async def disconnect(self, ws: Workspace) -> bool:
        """Forget the connection and the links given by hand."""
        had = self.store.read(ws.id) is not None
        self.store.delete(ws.id)
        await self.given_links.clear(ws.id)
        return had

    async def links(self, ws: Workspace, connection: ForgeConnection) -> list[Link]:
        given = await self.given_links.all(ws.id)
        found: list[Link] = []
        for repo in await self._app.service(RepoService).all(ws.id):
            if repo.id in given:
                found.append(Link(repo, given[repo.id], "given"))
            elif repo.source_kind == "url" and (name := full_name_from_origin(repo.source, connection.host)):
                found.append(Link(repo, name, "origin"))
        return found

    async def link_of(self, ws: Workspace, connection: ForgeConnection, repo: Repo) -> str:
        """The forge repository a workspace repo links to (``Refused`` when it links to none)."""
        for link in await self.links(ws, connection):
            if link.repo.id == repo.id:
                return link.full_name
        raise Refused(
            f"repo {repo.name} is not linked to a repository on {connection.host}: its origin is elsewhere and none "
            "was given (forge.linkRepo)",
            detail_code="repoNotLinked",
        )

    async def link(self, ws: Workspace, by: str, repo_ref: str, full_name: str | None) -> tuple[Repo, str | None]:
        """Link a repo by hand (an app connection checks the app is installed on it), or with None drop the
        hand-given link (the origin's counts again)."""
        connection = self.required(ws)
        repo = await self._app.service(RepoService).get(ws.id, repo_ref)
        now = self._app.clock.now()
        if full_name is None:
            await self.given_links.set(ws.id, repo.id, None, by, now)
            return repo, None
        name = check_full_name(full_name)
        if connection.kind == "app":
            await github.repo_installation(connection, name, await self.route(connection))
        await self.given_links.set(ws.id, repo.id, name, by, now)
        return repo, name


def app_setup_url(web_url: str, app_name: str, homepage: str, org: str | None) -> str:
    """The forge's page that creates a GitHub App with what Hangar needs filled in (name, homepage, the
    permissions steps use, no webhook). Reads no secret and contacts nobody."""
    if org is not None and not _LOGIN.match(org):
        raise InvalidArgs(f"{org!r} is not a GitHub organization's name", field="org")
    where = f"/organizations/{org}/settings/apps/new" if org else "/settings/apps/new"
    query = {"name": app_name, "url": homepage, "public": "false", "webhook_active": "false", **APP_SETUP_PERMISSIONS}
    return f"{web_url.rstrip('/')}{where}?{urlencode(query)}"
