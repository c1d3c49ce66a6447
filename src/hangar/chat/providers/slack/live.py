"""A workspace's live Slack connection: the Web API client, the Socket Mode supervisor and the bridge, as one.

``slack_connections(app)`` is the factory the chat part's connection registry calls with stored credentials:
it builds the three and starts them. The registry sees the ``ChatConnection`` face (state, the provider's error,
whether streaming works, stop); the bridge gets the events and the run follow-up.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from datetime import datetime

from hangar.chat.bridge import Bridge
from hangar.chat.connections import ChatConnection, ConnectionFactory, ConnectionState, Failure
from hangar.chat.inbound import InboundEvent, InboundMessage
from hangar.chat.providers.slack.api import provider_api
from hangar.chat.replies import ConnectionFlags
from hangar.chat.service import ChatService
from hangar.core.context import AppContext
from hangar.identity import Workspace

log = logging.getLogger(__name__)

PRUNE_EVERY_S = 600.0  # how often the events recorded as seen are pruned (on the next event after this long)


class LiveSlack:
    def __init__(self, app: AppContext, workspace: Workspace, provider: str, credentials: Mapping[str, str]) -> None:
        # Imported when a workspace connects: the Socket Mode client stands on aiohttp, a good part of a server
        # start, and most servers connect no chat provider.
        from hangar.chat.providers.slack.connection import SlackConnection

        self._workspace_id, self._provider = workspace.id, provider
        self.api = provider_api(app, credentials["botToken"])
        self.flags = ConnectionFlags()
        chat = app.service(ChatService)
        self._seen = chat.inbound_seen
        self._pruned = -PRUNE_EVERY_S
        command = chat.profile(workspace, provider).command
        self.bridge = Bridge(app, chat, workspace.id, provider, self.api, self.flags, command=command)

        def keep(failure: Failure | None) -> None:
            if failure is not None:
                app.metrics.chat_provider_error(provider)  # a connection attempt the provider failed
            try:
                chat.files.write_failure(workspace, provider, failure)
            except OSError:
                log.exception("chat connection of workspace %s: its last failure was not kept", workspace.id)

        self.connection = SlackConnection(
            self.api,
            credentials["appToken"],
            app.clock,
            on_event=self._on_event,
            on_state=self._moved,
            label=f"chat connection of workspace {workspace.id} ({provider})",
            on_failure=keep,
        )
        # What failed before a restart is still what is known, until this process's first attempt answers.
        self.connection.last_error = chat.files.read_failure(workspace, provider)

    async def _on_event(self, event: InboundEvent) -> str | None:
        """The bridge handles an event once, whichever process the provider delivered it to, however often: a
        redelivery after a hand-over reaches the process that took over, which finds it recorded and drops it."""
        key = event.event_id if isinstance(event, InboundMessage) else f"envelope:{event.envelope_id}"
        if time.monotonic() - self._pruned > PRUNE_EVERY_S:
            self._pruned = time.monotonic()
            await self._seen.prune(self._workspace_id)
        if not await self._seen.first_sight(self._workspace_id, self._provider, key):
            log.info("chat event %s of workspace %s was handled already: dropped", key, self._workspace_id)
            return None
        return await self.bridge.on_event(event)

    def _moved(self, state: ConnectionState, _message: str | None) -> None:
        if state == "connecting":
            # A new socket is a new chance: what the provider refused on the last one is asked again.
            self.flags.streaming_available = True
            self.flags.cards_available = True

    async def start(self) -> None:
        await self.bridge.start()
        self.connection.start()

    @property
    def state(self) -> ConnectionState:
        return self.connection.state

    @property
    def error(self) -> str | None:
        err = self.connection.error
        return err.message if err is not None and self.state == "error" else None

    @property
    def streaming_available(self) -> bool:
        return self.flags.streaming_available

    @property
    def last_error(self) -> Failure | None:
        return self.connection.last_error

    @property
    def next_retry_at(self) -> datetime | None:
        return self.connection.next_retry_at

    async def stop(self) -> None:
        try:
            await self.connection.stop()
            await self.bridge.stop()
        finally:
            await self.api.aclose()


def slack_connections(app: AppContext) -> ConnectionFactory:
    async def build(workspace: Workspace, provider: str, credentials: Mapping[str, str]) -> ChatConnection:
        live = LiveSlack(app, workspace, provider, credentials)
        await live.start()
        return live

    return build
