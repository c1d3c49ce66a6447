"""The chat part: its tables, ops, events, the deep-link route, and the service with the workspaces' connections.

``make_chat_part(factory)`` takes the provider transport that builds a live connection from stored credentials;
the part made without one (``CHAT_PART``) stores credentials and links but dials nothing, and says so in the
status (``error``, "no transport")."""

from __future__ import annotations

from hangar.chat.connections import ConnectionFactory, ConnectionRegistry
from hangar.chat.deeplink import ROUTES
from hangar.chat.events import CHAT_EVENTS
from hangar.chat.ops import CHAT_OPS
from hangar.chat.service import ChatService
from hangar.chat.tables import MIGRATIONS
from hangar.core.context import AppContext
from hangar.core.part import Part


def make_chat_part(factory: ConnectionFactory | None = None) -> Part:
    async def start(app: AppContext) -> None:
        chat = app.provide(ChatService(app, ConnectionRegistry(factory)))
        await chat.start_all()

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


CHAT_PART = make_chat_part()
