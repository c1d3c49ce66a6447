"""The records of reply cards still streaming (``chat_open_streams``), so that a restarted server finishes the
cards a previous process opened instead of leaving one that says ``Working on it...`` forever."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any

from hangar.chat.cards import Card, TurnOutcome
from hangar.chat.deeplink import public_open_url
from hangar.chat.errors import ChatProviderError
from hangar.chat.open_streams import OpenStream
from hangar.chat.outbound import ChatOutbound
from hangar.chat.service import ChatService
from hangar.core.context import AppContext

log = logging.getLogger(__name__)

RESTARTED = "The server restarted before this reply finished."


async def quietly(app: AppContext, provider: str, call: Awaitable[Any]) -> Any:
    """A provider call whose failure must not stop the bridge (a status line, a refusal, a clean-up)."""
    try:
        return await call
    except ChatProviderError as exc:
        app.metrics.chat_provider_error(provider)
        log.warning("chat bridge: %s refused a call: %s", provider, exc.provider_code)
        return None


class CardRecords:
    """The open reply cards of one workspace's bridge to one provider."""

    def __init__(self, app: AppContext, chat: ChatService, workspace_id: str, provider: str) -> None:
        self._app = app
        self._chat = chat
        self._workspace_id = workspace_id
        self._provider = provider

    async def remember(self, space_id: str, channel: str, ts: str, request: str) -> None:
        """The streamed message now open in ``space_id`` (a roll-over's replaces the one it closed; so does a
        later turn's, the table holding one per space)."""
        stream = OpenStream(space_id, self._provider, channel, ts, None, {"request": request}, self._app.clock.now())
        try:
            await self._chat.open_streams.record(self._workspace_id, stream)
        except Exception:  # the reply goes on; only a restart's clean-up of it is lost
            log.exception("chat bridge: the open reply in space %s was not recorded", space_id)

    async def forget(self, space_id: str, opened: list[str] | None = None) -> None:
        """A finished reply's record, only if it is still this reply's (``opened``: its messages; None: any)."""
        if opened is not None and not opened:
            return
        await self._chat.open_streams.finished(self._workspace_id, space_id, only_ts=opened)

    async def finish_left(self, api: ChatOutbound) -> None:
        """Cards a previous process opened and never finished: closed now, saying the server restarted."""
        rows = [r for r in await self._chat.open_streams.all(self._workspace_id) if r.provider == self._provider]
        for row in rows:
            link = public_open_url(self._app.settings, self._workspace_id, "spaces", row.space_id)
            note = RESTARTED + (f" The rest is in Hangar: {link}" if link else " The rest is in Hangar.")
            card = Card(str(row.card.get("request") or ""))
            card.set_setup(note)
            card.finish(TurnOutcome.interrupted, link)
            block = card.plan_block()
            try:
                await api.stop_stream(channel=row.channel, ts=row.ts, blocks=[block])
            except ChatProviderError:
                # The provider ended the stream on its side meanwhile: the message is still there to update.
                update = api.update_message(channel=row.channel, ts=row.ts, text=note, blocks=[block])
                await quietly(self._app, self._provider, update)
            await self.forget(row.space_id)
