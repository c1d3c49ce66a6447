"""A workspace's forge connection, in a file beside the workspace database; its repo links given by hand are in
the workspace database (``hangar.forges.tables``, ``ForgeLinks``).

Layout (``<dataDir>/<workspaceId>/forge_credentials/``, the folder 0700, the file 0600 and written atomically
through ``hangar.core.secretfiles``, the chat bridge's way):

    github.json   the connection: how (``app``: app id and private key; ``token``: a token), the forge's web
                  and API addresses, who connected it (and whether the server owner did) and when
    webhook.json  the webhook's secret (``forge.setWebhookSecret``), which deliveries are signed with
    poll.json     how often to poll the forge for pull requests (``forge.setPolling``; no file: no polling)

Secrets travel in only: nothing here is returned by an op, and ``ForgeConnection.public`` is what may be shown.
Every read goes to the file, so a connection changed by another process is seen at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from urllib.parse import urlsplit

import sqlalchemy as sa

from hangar.core.addresses import git_url_host
from hangar.core.db import Databases, write_transaction
from hangar.core.secretfiles import SecretFolder
from hangar.errors import InvalidArgs
from hangar.forges.tables import forge_links

FOLDER = "forge_credentials"
GITHUB = "github"
WEBHOOK = "webhook"
POLL = "poll"
GITHUB_WEB = "https://github.com"
GITHUB_API = "https://api.github.com"
_FULL_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")

Kind = Literal["app", "token"]


@dataclass(frozen=True)
class ForgeConnection:
    kind: Kind
    web_url: str  # https://github.com or a GitHub Enterprise Server's base URL
    api_url: str
    connected_at: datetime
    connected_by: str
    by_owner: bool = False  # the server owner connected it: its API may be at any address (``hangar.forges.reach``)
    app_id: int | None = None
    private_key: str | None = None  # PEM, app connections
    token: str | None = None  # token connections

    @property
    def secrets(self) -> tuple[str, ...]:
        """The connection's own credentials (the app's private key, a token): never in anything sent out."""
        return tuple(v for v in (self.private_key, self.token) if v)

    @property
    def host(self) -> str:
        """The forge's git host: what a brokered token is for and what an enclosure must reach."""
        return (urlsplit(self.web_url).hostname or "").lower()

    def to_file(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": self.kind,
            "webUrl": self.web_url,
            "apiUrl": self.api_url,
            "connectedAt": self.connected_at.isoformat(),
            "connectedBy": self.connected_by,
            "byOwner": self.by_owner,
        }
        if self.kind == "app":
            data |= {"appId": self.app_id, "privateKey": self.private_key}
        else:
            data["token"] = self.token
        return data

    @classmethod
    def from_file(cls, data: dict[str, Any]) -> ForgeConnection | None:
        try:
            kind = data["kind"]
            if kind not in ("app", "token"):
                return None
            return cls(
                kind=kind,
                web_url=str(data["webUrl"]),
                api_url=str(data["apiUrl"]),
                connected_at=datetime.fromisoformat(str(data["connectedAt"])),
                connected_by=str(data["connectedBy"]),
                by_owner=data.get("byOwner") is True,  # a file without it: held to an admin's rules
                app_id=int(data["appId"]) if kind == "app" else None,
                private_key=str(data["privateKey"]) if kind == "app" else None,
                token=str(data["token"]) if kind == "token" else None,
            )
        except (KeyError, ValueError, TypeError):
            return None


def web_and_api(base_url: str | None, api_url: str | None) -> tuple[str, str]:
    """The forge's web address and its REST API's: github.com's (``https://api.github.com``), or a GitHub
    Enterprise Server's (``<base>/api/v3``); ``api_url`` names the API's where it is elsewhere."""
    web = _address(base_url or GITHUB_WEB, "baseUrl").rstrip("/")
    if api_url:
        api = _address(api_url, "apiUrl").rstrip("/")
    else:
        api = GITHUB_API if urlsplit(web).hostname == "github.com" else f"{web}/api/v3"
    return web, api


def _address(url: str, field: str) -> str:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise InvalidArgs(f"{url!r} is not an http(s) address", field=field)
    if parts.username or parts.password or parts.query or parts.fragment:
        raise InvalidArgs(f"{field} is the forge's address alone: no credentials, query or fragment", field=field)
    return url.strip()


def check_full_name(full_name: str, field: str = "fullName") -> str:
    value = full_name.strip().removesuffix(".git")
    if not _FULL_NAME.match(value) or value.split("/", 1)[1] in (".", ".."):
        raise InvalidArgs(f"{full_name!r} is not a forge repository's owner/name", field=field)
    return value


def full_name_from_origin(source: str, host: str) -> str | None:
    """``owner/name`` of a repo origin on ``host`` (``https://host/owner/name(.git)``, ``git@host:owner/name``);
    None for an origin elsewhere or of another shape."""
    if git_url_host(source) != host:
        return None
    path = urlsplit(source).path if "://" in source else source.split(":", 1)[1]
    try:
        return check_full_name(path.strip("/"))
    except InvalidArgs:
        return None


class ForgeStore:
    def __init__(self, folder: SecretFolder) -> None:
        self._folder = folder

    def read(self, workspace_id: str) -> ForgeConnection | None:
        data = self._folder.read(workspace_id, GITHUB)
        return None if data is None else ForgeConnection.from_file(data)

    def write(self, workspace_id: str, connection: ForgeConnection) -> None:
        self._folder.write(workspace_id, GITHUB, connection.to_file())

    def delete(self, workspace_id: str) -> None:
        self._folder.remove(workspace_id, GITHUB)
        self._folder.remove(workspace_id, WEBHOOK)
        self._folder.remove(workspace_id, POLL)

    def webhook_secret(self, workspace_id: str) -> str | None:
        data = self._folder.read(workspace_id, WEBHOOK)
        secret = data.get("secret") if data else None
        return secret if isinstance(secret, str) and secret else None

    def poll_seconds(self, workspace_id: str) -> int | None:
        data = self._folder.read(workspace_id, POLL)
        seconds = data.get("seconds") if data else None
        return seconds if isinstance(seconds, int) and not isinstance(seconds, bool) and seconds > 0 else None

    def set_poll_seconds(self, workspace_id: str, seconds: int | None) -> None:
        if seconds is None:
            self._folder.remove(workspace_id, POLL)
        else:
            self._folder.write(workspace_id, POLL, {"seconds": seconds})

    def set_webhook_secret(self, workspace_id: str, secret: str | None) -> None:
        if secret is None:
            self._folder.remove(workspace_id, WEBHOOK)
        else:
            self._folder.write(workspace_id, WEBHOOK, {"secret": secret})


class ForgeLinks:
    """The repo links given by hand, in the workspace database: read there at every use, each change one write
    transaction, so links made by two processes at once are both kept."""

    def __init__(self, dbs: Databases) -> None:
        self._dbs = dbs

    async def all(self, workspace_id: str) -> dict[str, str]:
        engine = await self._dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            rows = (await conn.execute(sa.select(forge_links.c.repo_id, forge_links.c.full_name))).all()
        return {row.repo_id: row.full_name for row in rows}

    async def set(self, workspace_id: str, repo_id: str, full_name: str | None, by: str, at: datetime) -> None:
        """Link ``repo_id`` to ``full_name``, or with None drop its link."""
        async with write_transaction(await self._dbs.workspace(workspace_id)) as conn:
            await conn.execute(sa.delete(forge_links).where(forge_links.c.repo_id == repo_id))
            if full_name is not None:
                await conn.execute(
                    sa.insert(forge_links).values(repo_id=repo_id, full_name=full_name, linked_at=at, linked_by=by)
                )

    async def clear(self, workspace_id: str) -> None:
        async with write_transaction(await self._dbs.workspace(workspace_id)) as conn:
            await conn.execute(sa.delete(forge_links))
