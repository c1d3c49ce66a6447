"""The chat part's service: credentials in and connection status out, the per-workspace connections, the links.

Tokens travel one way: ``connect`` takes them, writes them to the workspace's credential file and hands them to
the connection; nothing here returns them (``status`` reports state, the provider's error and whether streaming
works). The transport reads them through ``credentials`` when it needs them again (the lead's app management).

The status also says what is wrong while the connection cannot get through: its last failure and when it tries
next. A failure is kept beside the credentials (``CredentialFiles.write_failure``), so after a restart the status
still shows it, with no next time, while the new process's first attempt is under way; that attempt's outcome
replaces it (another failure) or clears it (connected).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from hangar.chat.claims import InboundSeen
from hangar.chat.connections import ConnectionRegistry, ConnectionState, Failure
from hangar.chat.credentials import DIR_NAME, CredentialFiles
from hangar.chat.descriptor import DESCRIPTORS, descriptor_for, validate_credentials
from hangar.chat.link_codes import LinkCodes
from hangar.chat.links import UserLinks
from hangar.chat.open_streams import OpenStreams
from hangar.chat.profile import BotProfile, default_profile, edit_profile, setup_link
from hangar.chat.space_links import SpaceLinks
from hangar.core.context import AppContext
from hangar.errors import NotFound
from hangar.identity import IdentityService, Workspace, usable_workspace_ids
from hangar.workspace import SpaceService

log = logging.getLogger(__name__)

NOT_RUNNING = "credentials are stored but this server has not started the connection"
UNHELD = "credentials are stored but no server holds the connection (a server takes it at its next look)"


@dataclass(frozen=True)
class Owner:
    """The server process holding the connection, as its claim in the database says."""

    host: str
    pid: int


@dataclass(frozen=True)
class ConnectionStatus:
    provider: str
    state: ConnectionState
    error: str | None
    streaming_available: bool
    last_error: Failure | None = None
    next_retry_at: datetime | None = None
    owner: Owner | None = None


class ChatService:
    def __init__(self, app: AppContext, registry: ConnectionRegistry) -> None:
        self._app = app
        self.files = CredentialFiles(app.datadir, app.secret_folder(DIR_NAME))
        self.registry = registry
        self.codes = LinkCodes(app)
        self.user_links = UserLinks(app, self.codes)
        self.space_links = SpaceLinks(app, app.service(SpaceService))
        self.open_streams = OpenStreams(app)
        self.inbound_seen = InboundSeen(app, app.settings.chat_claim_ttl_seconds)

    async def workspace(self, workspace_id: str) -> Workspace:
        """The workspace record an id names: only a found workspace names a directory."""
        found = await self._app.service(IdentityService).get_workspace(workspace_id)
        if found is None:
            raise NotFound(f"workspace {workspace_id} does not exist")
        return found

    # -- connection ------------------------------------------------------------------------------------------

    async def status(self, workspace: Workspace, provider: str) -> ConnectionStatus:
        """The connection as this process sees it when it holds it, else as the holder's claim in the database
        says (its state as of the holder's last renewal); the holder is named either way."""
        descriptor_for(provider)
        if self.files.read(workspace, provider) is None:
            return ConnectionStatus(provider, "disconnected", None, False)
        claims = self.registry.claims
        claim = None if claims is None else await claims.read(workspace.id, provider)
        owner = None if claim is None else Owner(claim.holder.host, claim.holder.pid)
        conn = self.registry.get(workspace.id, provider)
        if conn is not None and (claim is None or claims is None or claim.holder == claims.holder):
            state = conn.state
            return ConnectionStatus(
                provider,
                state,
                conn.error if state == "error" else None,
                conn.streaming_available,
                last_error=conn.last_error,
                next_retry_at=conn.next_retry_at,
                owner=owner,
            )
        failure = self.files.read_failure(workspace, provider)
        if claim is None:
            why = NOT_RUNNING if claims is None else UNHELD
            return ConnectionStatus(provider, "error", why, False, last_error=failure)
        state = cast(ConnectionState, claim.state)
        return ConnectionStatus(
            provider,
            state,
            claim.error if state == "error" else None,
            claim.streaming_available,
            last_error=None if state == "connected" else failure,
            owner=owner,
        )

    async def connect(self, workspace: Workspace, provider: str, raw: Mapping[str, Any]) -> ConnectionStatus:
        """Check and store the submitted credentials, then restart the workspace's connection with them."""
        descriptor = descriptor_for(provider)
        credentials = validate_credentials(descriptor, raw, self.files.read(workspace, provider))
        self.files.write(workspace, provider, credentials)
        await self.registry.restart(workspace, provider, credentials)
        return await self.status(workspace, provider)

    async def disconnect(self, workspace: Workspace, provider: str) -> None:
        descriptor_for(provider)
        # The credentials go first: a process looking for connections to take over no longer finds this one.
        self.files.delete(workspace, provider)
        await self.registry.stop(workspace.id, provider)
        self.files.delete(workspace, provider)  # and what the stopping connection wrote meanwhile

    def credentials(self, workspace: Workspace, provider: str) -> dict[str, str] | None:
        return self.files.read(workspace, provider)

    def store_refresh_token(self, workspace: Workspace, provider: str, refresh_token: str) -> None:
        """Keep a rotated configuration refresh token at once: the previous one no longer works."""
        stored = self.files.read(workspace, provider) or {}
        self.files.write(workspace, provider, {**stored, "configRefreshToken": refresh_token})

    async def wanted(self) -> list[tuple[Workspace, str]]:
        """Every connection a usable workspace has credentials stored for."""
        found = []
        for workspace_id in await usable_workspace_ids(self._app):
            workspace = await self.workspace(workspace_id)
            found += [(workspace, p) for p in DESCRIPTORS if self.files.read(workspace, p) is not None]
        return found

    async def start_all(self) -> None:
        """At server start: move legacy files, then start a connection for every workspace with credentials."""
        for workspace_id in await usable_workspace_ids(self._app):
            workspace = await self.workspace(workspace_id)
            try:
                self.files.migrate_legacy(workspace)
            except OSError:
                log.exception("legacy chat files of workspace %s could not be migrated", workspace_id)
            for provider in DESCRIPTORS:
                credentials = self.files.read(workspace, provider)
                if credentials is not None:
                    await self.registry.restart(workspace, provider, credentials, new_credentials=False)

    # -- guided setup ----------------------------------------------------------------------------------------

    def profile(self, workspace: Workspace, provider: str) -> BotProfile:
        """The profile of an unfinished setup, else the default one for the workspace."""
        setup = self.files.read_setup(workspace, provider) or {}
        saved = setup.get("botProfile")
        base = default_profile(workspace.name)
        return edit_profile(base, saved) if isinstance(saved, dict) else base

    def setup_link(self, workspace: Workspace, provider: str, edits: Mapping[str, Any]) -> tuple[str, BotProfile]:
        profile = edit_profile(self.profile(workspace, provider), edits)
        return setup_link(descriptor_for(provider), profile), profile
