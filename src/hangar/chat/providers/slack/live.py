"""A workspace's live Slack connection: the Web API client, the Socket Mode supervisor and the bridge, as one.

``slack_connections(app)`` is the factory the chat part's connection registry calls with stored credentials:
it builds the three and starts them. The registry sees the ``ChatConnection`` face (state, the provider's error,
whether streaming works, stop); the bridge gets the events and the run follow-up.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from datetime import datetime

from hangar.chat.bridge import Bridge
from hangar.chat.claims import Holder
from hangar.chat.connections import ChatConnection, ConnectionFactory, ConnectionState, Failure
from hangar.chat.inbound import InboundEvent, InboundMessage, SlashCommand, event_from_text, event_text
from hangar.chat.providers.slack.api import provider_api
from hangar.chat.replies import ConnectionFlags
from hangar.chat.service import ChatService
from hangar.core.context import AppContext
from hangar.core.dbfailures import Paused
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
        claims = chat.registry.claims
        self._holder = (claims.holder if claims is not None else Holder.this_process()).id
        self._handling: set[str] = set()  # the events this process is handling now
        self._orphan_task: asyncio.Task[None] | None = None
        self._paused = Paused(f"chat connection of workspace {workspace.id}: unhandled events", log)
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
        """The bridge handles an event once at a time, whichever process the provider delivered it to, however
        often, and at least once: it is recorded (with a claim) before it is handled and marked handled after,
        so a copy is dropped and an event whose handler died is handled by the next holder (``_orphans``)."""
        key = event.event_id if isinstance(event, InboundMessage) else f"envelope:{event.envelope_id}"
        if time.monotonic() - self._pruned > PRUNE_EVERY_S:
            self._pruned = time.monotonic()
            await self._seen.prune(self._workspace_id)
        if key in self._handling or not await self._seen.receive(
            self._workspace_id, self._provider, key, event_text(event), self._holder
        ):
            log.info("chat event %s of workspace %s is handled already: dropped", key, self._workspace_id)
            return None
        return await self._handle(key, event)

    async def _handle(self, key: str, event: InboundEvent) -> str | None:
        self._handling.add(key)
        try:
            answer = await self.bridge.on_event(event)
            await self._seen.handled(self._workspace_id, self._provider, key)
            return answer
        finally:
            self._handling.discard(key)

    async def _orphans(self) -> None:
        """While this process holds the connection: handle the messages a dead holder took and never handled (a
        look every third of the claim's lapse; the first at once)."""
        while True:
            try:
                for key, text in await self._seen.orphans(self._workspace_id, self._provider):
                    event = event_from_text(text)
                    # A slash command is acked only once handled (its answer is the ack): the provider sends it
                    # again itself, and an answer made here would reach nobody.
                    if key in self._handling or isinstance(event, SlashCommand):
                        continue
                    if await self._seen.take(self._workspace_id, self._provider, key, self._holder):
                        log.info(
                            "chat event %s of workspace %s was left unhandled: handling it", key, self._workspace_id
                        )
                        await self._handle(key, event)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not self._paused.failed(exc):
                    log.exception("chat connection of workspace %s: unhandled events not looked at", self._workspace_id)
            else:
                self._paused.ok()
            await asyncio.sleep(self._seen.claim_ttl / 3)

    def _moved(self, state: ConnectionState, _message: str | None) -> None:
        if state == "connecting":
            # A new socket is a new chance: what the provider refused on the last one is asked again.
            self.flags.streaming_available = True
            self.flags.cards_available = True

    async def start(self) -> None:
        await self.bridge.start()
        self.connection.start()
        self._orphan_task = asyncio.get_running_loop().create_task(self._orphans(), name="chat-inbound-orphans")

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
            if self._orphan_task is not None:
                self._orphan_task.cancel()
                await asyncio.gather(self._orphan_task, return_exceptions=True)
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
