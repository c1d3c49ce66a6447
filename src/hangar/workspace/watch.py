"""Following a space live: its new messages and the turn events of agents working in it.

Every event that concerns a space carries ``space_id`` in its payload (messages, provisioning, agent turn
events), so one workspace subscription filtered on that field serves them all without this module knowing the
agents part. With ``after_seq`` the persisted events after that sequence number are replayed first, and live
events already replayed are skipped, so a reconnecting watcher loses nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from hangar.core.context import AppContext
from hangar.core.events import StoredEvent
from hangar.core.ids import new_id
from hangar.workspace.records import iso

REPLAY_PAGE = 500


def event_frame(ev: StoredEvent) -> dict[str, Any]:
    return {"seq": ev.seq, "type": ev.type, "at": iso(ev.occurred_at), "payload": ev.payload}


async def follow_space(
    app: AppContext, workspace_id: str, space_id: str, *, after_seq: int | None = None
) -> AsyncIterator[StoredEvent]:
    """Yield the space's events as they are published (after replaying those after ``after_seq``)."""
    queue: asyncio.Queue[StoredEvent] = asyncio.Queue()

    async def on_event(ev: StoredEvent) -> None:
        if ev.payload.get("space_id") == space_id:
            queue.put_nowait(ev)

    sub = app.bus.subscribe(on_event, name=f"space-watch:{space_id}:{new_id()[:8]}", workspace_id=workspace_id)
    try:
        # Live events are delivered in publish order, which may differ slightly from sequence order, so only
        # the replayed range is skipped (SQLite writes are serialized: every seq up to it was in the replay).
        replayed_up_to = 0
        if after_seq is not None:
            replayed_up_to = after_seq
            while True:  # in pages, so a watcher far behind does not load the whole history at once
                page = await app.bus.replay(workspace_id, after_seq=replayed_up_to, limit=REPLAY_PAGE)
                for ev in page:
                    replayed_up_to = ev.seq
                    if ev.payload.get("space_id") == space_id:
                        yield ev
                if len(page) < REPLAY_PAGE:
                    break
        while True:
            ev = await queue.get()
            if ev.seq > replayed_up_to:
                yield ev
    finally:
        await app.bus.unsubscribe(sub)
