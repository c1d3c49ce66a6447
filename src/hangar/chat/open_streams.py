"""Streamed replies still open, one per space, so a restarted server can finish their cards.

A reply that starts streaming records where its message is (channel and ``ts``), the run it follows and the card
as last sent; finishing the reply forgets it. At start the bridge reads what is left and finishes each card (the
run's final status and a note) instead of leaving one that says "Working on it..." forever.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from hangar.chat.tables import chat_open_streams
from hangar.core.context import AppContext


@dataclass(frozen=True)
class OpenStream:
    space_id: str
    provider: str
    channel: str
    ts: str
    run_id: str | None
    card: dict[str, Any]
    started_at: datetime


class OpenStreams:
    def __init__(self, app: AppContext) -> None:
        self._app = app

    async def record(self, workspace_id: str, stream: OpenStream) -> None:
        """Remember (or update: a new run, a newer card) the space's open stream."""
        t = chat_open_streams
        values = {
            "provider": stream.provider,
            "channel": stream.channel,
            "ts": stream.ts,
            "run_id": stream.run_id,
            "card": stream.card,
            "started_at": stream.started_at,
        }
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            done = await conn.execute(sa.update(t).where(t.c.space_id == stream.space_id).values(**values))
            if done.rowcount == 0:
                await conn.execute(sa.insert(t).values(space_id=stream.space_id, **values))

    async def finished(self, workspace_id: str, space_id: str, *, only_ts: list[str] | None = None) -> None:
        """Forget the space's open stream; with ``only_ts``, only if it is one of those messages (a later reply
        in the same space may have recorded its own since)."""
        t = chat_open_streams
        where = t.c.space_id == space_id
        if only_ts is not None:
            where = sa.and_(where, t.c.ts.in_(only_ts))
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            await conn.execute(sa.delete(t).where(where))

    async def all(self, workspace_id: str) -> list[OpenStream]:
        t = chat_open_streams
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            rows = (await conn.execute(sa.select(t).order_by(t.c.started_at))).mappings().all()
        return [OpenStream(**{**dict(r), "card": dict(r["card"])}) for r in rows]
