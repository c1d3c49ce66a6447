"""The chat part: its tables, ops, events, the deep-link route, and the service with the workspaces' connections.

``make_chat_part(transport)`` takes the provider transport that builds a live connection from stored
credentials (``CHAT_PART``: Slack's); the part made with ``None`` stores credentials and links but dials nothing,
and says so in the status (``error``, "no transport")."""

from __future__ import annotations

from collections.abc import Callable

from hangar.chat.claims import ConnectionClaims, Holder
from hangar.chat.connections import ConnectionFactory, ConnectionRegistry
from hangar.chat.deeplink import ROUTES
from hangar.chat.events import CHAT_EVENTS
from hangar.chat.ops import CHAT_OPS
from hangar.chat.providers.slack.live import slack_connections
from hangar.chat.service import ChatService
from hangar.chat.tables import MIGRATIONS
from hangar.core.context import AppContext
from hangar.core.part import Part

Transport = Callable[[AppContext], ConnectionFactory]


def make_chat_part(transport: Transport | None) -> Part:
    async def start(app: AppContext) -> None:
        if transport is None:  # nothing dials, so there is nothing to hold
            chat = app.provide(ChatService(app, ConnectionRegistry()))
            await chat.start_all()
            return
        claims = ConnectionClaims(app, Holder.this_process(), app.settings.chat_claim_ttl_seconds)
        chat = app.provide(ChatService(app, ConnectionRegistry(transport(app), claims)))
        await chat.start_all()
        chat.registry.start_watching(chat.wanted, chat.credentials)

    async def stop(app: AppContext) -> None:
        chat = app.maybe_service(ChatService)
        if chat is not None:
            await chat.registry.stop_all()

    return Part(
        name="chat",
        ops=CHAT_OPS,
        routes=ROUTES,
        migrations=[MIGRATIONS],
        events=CHAT_EVENTS,
        start=start,
        stop=stop,
    )


CHAT_PART = make_chat_part(slack_connections)
