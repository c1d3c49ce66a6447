"""Following a space live: its new messages and the turn events of agents working in it.

Every event that concerns a space carries ``spaceId`` in its payload (messages, provisioning, agent turn
events), so one workspace subscription filtered on that field serves them all without this module knowing the
agents part. The subscription is made before the watcher is answered, so nothing published after the answer is
missed. With ``after_seq`` the persisted events after that sequence number are replayed first, and live events
already replayed are skipped, so a reconnecting watcher loses nothing either.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from hangar.core.context import AppContext
from hangar.core.event_types import StoredEvent
from hangar.core.events import Subscription
from hangar.core.ids import new_id
from hangar.workspace.results import SpaceEventFrame

REPLAY_PAGE = 500


def event_frame(ev: StoredEvent) -> SpaceEventFrame:
    return SpaceEventFrame(seq=ev.seq, type=ev.type, at=ev.occurred_at, payload=ev.payload)


class SpaceFollower:
    """A subscription to one space's events; ``aclose`` ends it (safe twice)."""

    def __init__(self, app: AppContext, workspace_id: str, space_id: str) -> None:
        self._app = app
        self._ws = workspace_id
        self._space_id = space_id
        self._queue: asyncio.Queue[StoredEvent] = asyncio.Queue()
        self._sub: Subscription | None = app.bus.subscribe(
            self._on_event, name=f"space-watch:{space_id}:{new_id()[:8]}", workspace_id=workspace_id
        )

    async def _on_event(self, ev: StoredEvent) -> None:
        if ev.payload.get("spaceId") == self._space_id:
            self._queue.put_nowait(ev)

    async def events(self, *, after_seq: int | None = None) -> AsyncIterator[StoredEvent]:
        # Live events are delivered in publish order, which may differ slightly from sequence order, so only
        # the replayed range is skipped (SQLite writes are serialized: every seq up to it was in the replay).
        replayed_up_to = 0
        if after_seq is not None:
            replayed_up_to = after_seq
            while True:  # in pages, so a watcher far behind does not load the whole history at once
                page = await self._app.bus.replay(self._ws, after_seq=replayed_up_to, limit=REPLAY_PAGE)
                for ev in page:
                    replayed_up_to = ev.seq
                    if ev.payload.get("spaceId") == self._space_id:
                        yield ev
                if len(page) < REPLAY_PAGE:
                    break
        while True:
            ev = await self._queue.get()
            if ev.seq > replayed_up_to:
                yield ev

    async def aclose(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None:
            await self._app.bus.unsubscribe(sub)
