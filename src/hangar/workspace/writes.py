"""One writer at a time per workspace database, within this process.

SQLite admits one writer; a second one waits in its busy handler, which sleeps in growing steps (up to 100 ms)
before retrying. When many agent runs stream events into one workspace at once, those sleeps, not the writes,
would dominate. Queueing the writers on an asyncio lock instead hands the database from one to the next at
once. Parts that write often and concurrently (messages, agent turn events) take this lock around each write.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hangar.rpc.context import OpContext


class WorkspaceWrites:
    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}

    def lock(self, workspace_id: str) -> asyncio.Lock:
        lock = self._locks.get(workspace_id)
        if lock is None:
            lock = self._locks[workspace_id] = asyncio.Lock()
        return lock


async def audit_queued(ctx: OpContext, action: str, target: str, details: dict[str, Any] | None = None) -> None:
    """An audit entry written in turn with this part's other writes (``WorkspaceWrites``), for ops that run
    while agents are streaming into the same database."""
    async with ctx.app.service(WorkspaceWrites).lock(ctx.ws):
        await ctx.audit(action, target, details)
