"""Managing the workspace's chat app from the product: create it, read and edit its bot profile.

Every call spends the app configuration refresh token: it is rotated first (the provider answers a 12-hour access
token and a new refresh token, the old one no longer works) and the new one is stored at once, before the access
token is used, so a failure later in the call never leaves the workspace with a dead token. Where the refresh
token lives: with the stored credentials once the workspace is connected, else in the unfinished setup file
(``chat.createApp`` takes it there before the bot and app tokens exist). The app's own secrets that creating it
answers (client secret, signing secret) are never kept: Socket Mode needs none of them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from hangar.chat.descriptor import descriptor_for
from hangar.chat.profile import BotProfile, build_manifest, edit_profile, manifest_problems, profile_from_manifest
from hangar.chat.providers.slack.api import SlackApi, provider_api
from hangar.chat.service import ChatService
from hangar.core.context import AppContext
from hangar.errors import Conflict, InvalidArgs, Refused
from hangar.identity import Workspace

NO_REFRESH_TOKEN = (
    "an app configuration refresh token is needed to create or edit the app from Hangar: create one on the "
    "provider's app configuration page and paste it (it starts with xoxe)"
)
NO_APP = "no app is known for this workspace yet: create it first, or connect with the bot's tokens"
REINSTALL = "reinstall"
INSTALL_STEPS = (
    "Install the app to your team from the provider's page (the install link).",
    "Create an app-level token with the connections:write scope.",
    "Paste the bot token (xoxb-) and the app-level token (xapp-) into Connect.",
)


@dataclass(frozen=True)
class Created:
    app_id: str
    install_url: str | None
    profile: BotProfile


@dataclass(frozen=True)
class Edited:
    profile: BotProfile
    remaining_step: str | None


class AppManagement:
    def __init__(self, app: AppContext) -> None:
        self._app = app
        self._chat = app.service(ChatService)

    @asynccontextmanager
    async def _access(
        self, ws: Workspace, provider: str, given: str | None = None
    ) -> AsyncIterator[tuple[SlackApi, str]]:
        """A Web API client and a fresh configuration access token; the rotated refresh token is stored first."""
        refresh = (given or "").strip() or self._stored_refresh(ws, provider)
        if not refresh:
            raise Refused(NO_REFRESH_TOKEN, detail_code="noRefreshToken")
        field = next(f for f in descriptor_for(provider).fields if f.id == "configRefreshToken")
        if not refresh.startswith(field.prefix):
            raise InvalidArgs(field.refusal, field="configRefreshToken")
        api = provider_api(self._app)
        try:
            access, rotated = await api.rotate_config_token(refresh)
            self._store_refresh(ws, provider, rotated)
            yield api, access
        finally:
            await api.aclose()

    def _stored_refresh(self, ws: Workspace, provider: str) -> str:
        stored = self._chat.files.read(ws, provider) or {}
        setup = self._chat.files.read_setup(ws, provider) or {}
        return str(stored.get("configRefreshToken") or setup.get("configRefreshToken") or "")

    def _store_refresh(self, ws: Workspace, provider: str, token: str) -> None:
        if self._chat.files.read(ws, provider) is not None:
            self._chat.store_refresh_token(ws, provider, token)
        else:
            setup = self._chat.files.read_setup(ws, provider) or {}
            self._chat.files.write_setup(ws, provider, {**setup, "configRefreshToken": token})

    async def _app_id(self, ws: Workspace, provider: str) -> str:
        setup = self._chat.files.read_setup(ws, provider) or {}
        if setup.get("appId"):
            return str(setup["appId"])
        credentials = self._chat.files.read(ws, provider)
        if credentials and credentials.get("botToken"):
            api = provider_api(self._app, credentials["botToken"])
            try:
                return (await api.auth_test()).app_id
            finally:
                await api.aclose()
        raise Conflict(NO_APP)

    async def create(
        self, ws: Workspace, provider: str, edits: Mapping[str, Any], refresh_token: str | None
    ) -> Created:
        descriptor = descriptor_for(provider)
        profile = edit_profile(self._chat.profile(ws, provider), edits)
        manifest = build_manifest(descriptor, profile)
        async with self._access(ws, provider, refresh_token) as (api, access):
            created = await api.manifest_create(access, manifest)
        app_id = str(created.get("app_id") or "")
        install_url = created.get("oauth_authorize_url")
        setup = self._chat.files.read_setup(ws, provider) or {}
        self._chat.files.write_setup(
            ws,
            provider,
            {
                **setup,
                "appId": app_id,
                "installUrl": install_url,
                "botProfile": _wire(profile),
                "createdAt": self._app.clock.now().isoformat(),
            },
        )
        return Created(app_id, str(install_url) if install_url else None, profile)

    async def profile(self, ws: Workspace, provider: str) -> BotProfile:
        app_id = await self._app_id(ws, provider)
        async with self._access(ws, provider) as (api, access):
            manifest = await api.manifest_export(access, app_id)
        return profile_from_manifest(manifest, self._chat.profile(ws, provider))

    async def edit(self, ws: Workspace, provider: str, edits: Mapping[str, Any]) -> Edited:
        descriptor = descriptor_for(provider)
        app_id = await self._app_id(ws, provider)
        async with self._access(ws, provider) as (api, access):
            existing = await api.manifest_export(access, app_id)
            profile = edit_profile(profile_from_manifest(existing, self._chat.profile(ws, provider)), edits)
            manifest = build_manifest(descriptor, profile, existing)
            problems = manifest_problems(descriptor, manifest)
            if problems:  # our own builder broke an assertion: never send that
                raise InvalidArgs("the app manifest would not hold: " + "; ".join(problems))
            answer = await api.manifest_update(access, app_id, manifest)
        return Edited(profile, REINSTALL if answer.get("permissions_updated") else None)


def _wire(profile: BotProfile) -> dict[str, Any]:
    return {
        "appName": profile.app_name,
        "botDisplayName": profile.bot_display_name,
        "description": profile.description,
        "agentDescription": profile.agent_description,
        "command": profile.command,
        "agentEnabled": profile.agent_enabled,
    }
