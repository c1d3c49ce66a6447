"""The Slack Web API as the bridge needs it: ``SlackApi`` implements ``hangar.chat.outbound.ChatOutbound`` plus
identity look-ups, the socket URL, config-token rotation and the app manifest calls.

Built on slack_sdk's ``AsyncWebClient`` with one shared aiohttp session per ``SlackApi`` (without one the SDK
opens a session per call) and the base URL from the ``chatprovider_api_url`` setting. Every call goes through
``ratelimit.RateLimiter`` (pacing, 429 cooldowns, retries on the injected clock). Every failure becomes a
``ChatProviderError``: the provider's code when it answered one, ``TRANSPORT_CODE`` when it could not be reached or
answered a 5xx. Tokens travel only in the ``Authorization`` header or the one parameter that needs them; they are
never put in an error message or a log line (the SDK's own logger is held above debug, where it prints arguments).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hangar.chat.errors import TRANSPORT_CODE, ChatProviderError, network_reason
from hangar.chat.outbound import Block, Chunk
from hangar.chat.providers.slack.ratelimit import RateLimiter, retry_after_of
from hangar.core.clock import Clock
from hangar.core.context import AppContext

if TYPE_CHECKING:
    # The SDK's web client stands on aiohttp, a good part of a server start: both are imported when the first
    # call is made (most servers connect no chat provider).
    import aiohttp
    from slack_sdk.web.async_client import AsyncWebClient
    from slack_sdk.web.async_slack_response import AsyncSlackResponse

log = logging.getLogger(__name__)

# The SDK logs request arguments (a refresh token among them) at debug level when its logger's own level allows it.
SDK_LOG = logging.getLogger("hangar.chat.providers.slack.sdk")
SDK_LOG.setLevel(logging.WARNING)

TIMEOUT_SECONDS = 30


@dataclass(frozen=True, slots=True)
class BotIdentity:
    team_id: str
    bot_user_id: str  # the U... the bot posts as: what a mention looks like, what to ignore
    app_id: str
    bot_id: str


@dataclass(frozen=True, slots=True)
class UserProfile:
    user_id: str
    label: str  # display name, else real name, else the id
    email: str | None  # only a confirmed address


def _plain(items: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    return None if items is None else [dict(i) for i in items]


def provider_error(method: str, error: BaseException) -> ChatProviderError:
    """What ``method`` failing with ``error`` means for the bridge (no argument or token in the text)."""
    # Imported here, as in ``_web``: the SDK's package loads its whole Web API client and block models, which the
    # server does not need until a workspace connects to Slack.
    from slack_sdk.errors import SlackApiError

    if isinstance(error, SlackApiError):
        response = error.response
        status = response.status_code
        data = response.data if isinstance(response.data, dict) else {}
        code = str(data.get("error") or "")
        if status >= 500 or not code:
            return ChatProviderError(
                TRANSPORT_CODE, f"{method}: the chat provider answered HTTP {status}.", status=status
            )
        message = f"{method}: the chat provider answered {code}."
        if code == "missing_scope" and data.get("needed"):
            message = f"{method}: the token lacks the scope {data['needed']} (it has {data.get('provided', 'none')})."
        elif code == "invalid_manifest" and isinstance(data.get("errors"), list):
            # The manifest is ours, not a secret: what the provider says of each field is what the admin needs.
            faults = [
                f"{e.get('pointer', '')}: {e.get('message', '')}" for e in data["errors"][:5] if isinstance(e, dict)
            ]
            message = f"{method}: the chat provider refused the app manifest ({'; '.join(faults)})."
        return ChatProviderError(code, message, status=status, retry_after=retry_after_of(error))
    return ChatProviderError(
        TRANSPORT_CODE, f"{method}: the chat provider could not be reached ({network_reason(error)})."
    )


class SlackApi:
    """The Web API for one app in one workspace, called with its bot token (``token``)."""

    def __init__(self, token: str, *, clock: Clock, api_url: str, timeout: int = TIMEOUT_SECONDS) -> None:
        self._token = token
        self._api_url = api_url
        self._timeout = timeout
        self._limiter = RateLimiter(clock)
        self._session: aiohttp.ClientSession | None = None
        self._client: AsyncWebClient | None = None
        # Told about every refused credential, whichever call met it (the connection goes to ``error``).
        self.terminal_listeners: list[Callable[[ChatProviderError], None]] = []

    def _web(self) -> AsyncWebClient:
        # Made on first use: an aiohttp session belongs to the running loop.
        if self._client is None:
            import aiohttp
            from slack_sdk.web.async_client import AsyncWebClient

            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self._timeout))
            self._client = AsyncWebClient(
                token=self._token,
                base_url=self._api_url,
                session=self._session,
                logger=SDK_LOG,
                retry_handlers=[],  # the rate limiter owns retries
            )
        return self._client

    @property
    def web_client(self) -> AsyncWebClient:
        """The SDK client (the Socket Mode client wants one; it is never used to dial from there)."""
        return self._web()

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
        self._session = None
        self._client = None

    async def _call(
        self, method: str, call: Callable[[AsyncWebClient], Awaitable[AsyncSlackResponse]]
    ) -> dict[str, Any]:
        import aiohttp  # here, as in ``_web``: see the imports above
        from slack_sdk.errors import SlackApiError

        web = self._web()

        async def attempt() -> AsyncSlackResponse:
            try:
                return await call(web)
            except aiohttp.ServerDisconnectedError:
                # A pooled keep-alive connection the provider had already closed: one fresh try.
                return await call(web)

        try:
            response = await self._limiter.run(method, attempt)
        except (TimeoutError, SlackApiError, aiohttp.ClientError, OSError) as e:
            error = provider_error(method, e)
            log.info("chat provider call %s failed: %s", method, error.provider_code)
            if error.terminal:
                for listener in list(self.terminal_listeners):
                    listener(error)
            raise error from None
        data = response.data
        return dict(data) if isinstance(data, dict) else {}

    # --- identity and the socket ---

    async def auth_test(self) -> BotIdentity:
        data = await self._call("auth.test", lambda w: w.auth_test())
        return BotIdentity(
            team_id=str(data.get("team_id") or ""),
            bot_user_id=str(data.get("user_id") or ""),
            app_id=str(data.get("app_id") or ""),
            bot_id=str(data.get("bot_id") or ""),
        )

    async def users_info(self, user_id: str) -> UserProfile:
        data = await self._call("users.info", lambda w: w.users_info(user=user_id))
        user = data.get("user") or {}
        profile = user.get("profile") or {}
        label = profile.get("display_name") or profile.get("real_name") or user.get("real_name") or user_id
        email = profile.get("email") if user.get("is_email_confirmed") is True else None
        return UserProfile(user_id=user_id, label=str(label), email=str(email) if email else None)

    async def conversations_info(self, channel: str) -> str:
        """The channel's name ("" for a DM, which has none)."""
        data = await self._call("conversations.info", lambda w: w.conversations_info(channel=channel))
        return str((data.get("channel") or {}).get("name") or "")

    async def connections_open(self, app_token: str) -> str:
        """A one-use Socket Mode URL, asked for with the app-level token."""
        data = await self._call("apps.connections.open", lambda w: w.apps_connections_open(app_token=app_token))
        return str(data.get("url") or "")

    async def rotate_config_token(self, refresh_token: str) -> tuple[str, str]:
        """(access token, new refresh token); the old refresh token is spent: store the new one at once."""
        data = await self._call("tooling.tokens.rotate", lambda w: w.tooling_tokens_rotate(refresh_token=refresh_token))
        return str(data.get("token") or ""), str(data.get("refresh_token") or "")

    # --- the app manifest, with a configuration access token ---

    async def manifest_create(self, config_token: str, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """``app_id``, ``credentials``, ``oauth_authorize_url`` of the new app."""
        return await self._call(
            "apps.manifest.create", lambda w: w.apps_manifest_create(manifest=dict(manifest), token=config_token)
        )

    async def manifest_update(self, config_token: str, app_id: str, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """Includes ``permissions_updated``: True when a reinstall is needed."""
        return await self._call(
            "apps.manifest.update",
            lambda w: w.apps_manifest_update(app_id=app_id, manifest=dict(manifest), token=config_token),
        )

    async def manifest_export(self, config_token: str, app_id: str) -> dict[str, Any]:
        data = await self._call(
            "apps.manifest.export", lambda w: w.apps_manifest_export(app_id=app_id, token=config_token)
        )
        return dict(data.get("manifest") or {})

    async def manifest_validate(
        self, config_token: str, manifest: Mapping[str, Any], app_id: str | None = None
    ) -> None:
        """Raises ``ChatProviderError("invalid_manifest")`` when the provider finds faults."""
        await self._call(
            "apps.manifest.validate",
            lambda w: w.apps_manifest_validate(manifest=dict(manifest), app_id=app_id, token=config_token),
        )

    # --- ChatOutbound ---

    async def post_message(
        self, *, channel: str, text: str, thread_ts: str | None = None, blocks: Sequence[Block] | None = None
    ) -> str:
        data = await self._call(
            "chat.postMessage",
            lambda w: w.chat_postMessage(channel=channel, text=text, thread_ts=thread_ts, blocks=_plain(blocks)),
        )
        return str(data.get("ts") or "")

    async def update_message(self, *, channel: str, ts: str, text: str, blocks: Sequence[Block] | None = None) -> None:
        await self._call(
            "chat.update", lambda w: w.chat_update(channel=channel, ts=ts, text=text, blocks=_plain(blocks))
        )

    async def post_ephemeral(self, *, channel: str, user: str, text: str, thread_ts: str | None = None) -> None:
        await self._call(
            "chat.postEphemeral",
            lambda w: w.chat_postEphemeral(channel=channel, user=user, text=text, thread_ts=thread_ts),
        )

    async def start_stream(
        self,
        *,
        channel: str,
        thread_ts: str,
        recipient_user_id: str | None = None,
        recipient_team_id: str | None = None,
        markdown_text: str | None = None,
        chunks: Sequence[Chunk] | None = None,
        task_display_mode: str | None = None,
    ) -> str:
        data = await self._call(
            "chat.startStream",
            lambda w: w.chat_startStream(
                channel=channel,
                thread_ts=thread_ts,
                recipient_user_id=recipient_user_id,
                recipient_team_id=recipient_team_id,
                markdown_text=markdown_text,
                chunks=_plain(chunks),
                task_display_mode=task_display_mode,
            ),
        )
        return str(data.get("ts") or "")

    async def append_stream(
        self, *, channel: str, ts: str, markdown_text: str | None = None, chunks: Sequence[Chunk] | None = None
    ) -> None:
        await self._call(
            "chat.appendStream",
            lambda w: w.chat_appendStream(channel=channel, ts=ts, markdown_text=markdown_text, chunks=_plain(chunks)),
        )

    async def stop_stream(
        self,
        *,
        channel: str,
        ts: str,
        markdown_text: str | None = None,
        chunks: Sequence[Chunk] | None = None,
        blocks: Sequence[Block] | None = None,
    ) -> None:
        await self._call(
            "chat.stopStream",
            lambda w: w.chat_stopStream(
                channel=channel, ts=ts, markdown_text=markdown_text, chunks=_plain(chunks), blocks=_plain(blocks)
            ),
        )

    async def set_thread_status(self, *, channel: str, thread_ts: str, status: str) -> None:
        await self._call(
            "assistant.threads.setStatus",
            lambda w: w.assistant_threads_setStatus(channel_id=channel, thread_ts=thread_ts, status=status),
        )

    async def set_thread_title(self, *, channel: str, thread_ts: str, title: str) -> None:
        await self._call(
            "assistant.threads.setTitle",
            lambda w: w.assistant_threads_setTitle(channel_id=channel, thread_ts=thread_ts, title=title),
        )


def provider_api(app: AppContext, token: str = "") -> SlackApi:
    """A client of the provider's Web API as this server is configured (``HANGAR_CHATPROVIDER_API_URL``)."""
    return SlackApi(token, clock=app.clock, api_url=app.settings.chatprovider_api_url)
