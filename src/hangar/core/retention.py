"""Retention: deleting a workspace's domain events and audit rows older than a horizon, never what is still needed.

Kept whatever their age:

- events after the lowest durable consumer's cursor (``event_cursors``: the pipelines' event triggers);
- events after a part's floor (``EventFloor``, declared in ``Part.event_floor``): a suspended pipeline step's
  ``sinceSeq`` or the finished task it waits on, a running agent run's events from its first;
- an event the outbox still holds (its relay looks the id up in the workspace to write it only once: pruned, it
  would be written again);
- the newest event, and the newest audit row of each target (a target's audit sequence goes on from it).

Deleting runs in batches of ``BATCH`` rows, each its own short write transaction, so a writer waits for one batch
at most. Each batch raises a mark in ``retention_marks``: ``events.prunedThrough`` (events at or below that seq
may be gone; a watcher resuming from before it is told so, ``check_resumable``) and ``audit.prunedThrough``. The
audit log refuses deletions by trigger except of the rows a pass marks ``audit.deletableThrough`` inside its own
transaction, put back to 0 before it commits (``hangar.core.triggers.prunable_audit_sql``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.core import tables
from hangar.core.context import AppContext
from hangar.core.db import write_transaction
from hangar.core.outbox import event_outbox
from hangar.core.triggers import AUDIT_DELETABLE
from hangar.errors import Conflict

BATCH = 500
EVENTS_PRUNED = "events.prunedThrough"
AUDIT_PRUNED = "audit.prunedThrough"

# A part's floor in a workspace: events with a greater seq are still needed by it (None: it needs none).
EventFloor = Callable[[AppContext, str], Awaitable[int | None]]


class EventFloors:
    """Every part's ``EventFloor``, handed over by the composition (``Part.event_floor``)."""

    def __init__(self, floors: Sequence[EventFloor]) -> None:
        self._floors = tuple(floors)

    async def lowest(self, app: AppContext, workspace_id: str) -> int | None:
        found = [f for f in [await floor(app, workspace_id) for floor in self._floors] if f is not None]
        return min(found) if found else None


@dataclass(frozen=True)
class Pruned:
    events: int
    audit: int


async def prune_workspace(
    app: AppContext,
    workspace_id: str,
    *,
    events_before: datetime | None,
    audit_before: datetime | None,
    floors: EventFloors,
    batch: int = BATCH,
) -> Pruned:
    """Delete the workspace's events that occurred before ``events_before`` and audit rows written before
    ``audit_before`` (None: keep them all), except what is still needed; how many of each went."""
    events = 0 if events_before is None else await _prune_events(app, workspace_id, events_before, floors, batch)
    audit = 0 if audit_before is None else await _prune_audit(app, workspace_id, audit_before, batch)
    return Pruned(events, audit)


async def _event_floor(app: AppContext, workspace_id: str, floors: EventFloors) -> int:
    """The highest seq that may be deleted: below the newest event, every cursor and every part's floor."""
    engine = await app.dbs.workspace(workspace_id)
    async with engine.connect() as conn:
        top = (await conn.execute(sa.select(sa.func.max(tables.domain_events.c.seq)))).scalar()
        cursor = (await conn.execute(sa.select(sa.func.min(tables.event_cursors.c.seq)))).scalar()
    bounds = [int(top or 0) - 1]
    if cursor is not None:
        bounds.append(int(cursor))
    if (part := await floors.lowest(app, workspace_id)) is not None:
        bounds.append(part)
    return min(bounds)


async def _outboxed(app: AppContext, workspace_id: str) -> list[str]:
    """Ids of the workspace's events the outbox still holds (relayed or not)."""
    o = event_outbox
    async with app.dbs.server.connect() as conn:
        return list((await conn.execute(sa.select(o.c.id).where(o.c.workspace_id == workspace_id))).scalars())


async def _prune_events(app: AppContext, workspace_id: str, before: datetime, floors: EventFloors, batch: int) -> int:
    floor = await _event_floor(app, workspace_id, floors)
    keep = await _outboxed(app, workspace_id)
    engine = await app.dbs.workspace(workspace_id)
    t = tables.domain_events
    pruned = 0
    while True:
        async with write_transaction(engine) as conn:
            q = sa.select(t.c.seq).where(t.c.seq <= floor, t.c.occurred_at < before)
            if keep:
                q = q.where(t.c.id.not_in(keep))
            seqs = list((await conn.execute(q.order_by(t.c.seq).limit(batch))).scalars())
            if seqs:
                await conn.execute(sa.delete(t).where(t.c.seq.in_(seqs)))
                await _raise_mark(conn, EVENTS_PRUNED, max(seqs))
        pruned += len(seqs)
        if len(seqs) < batch:
            return pruned
        await asyncio.sleep(0)  # writers waiting for the database go first


async def _prune_audit(app: AppContext, workspace_id: str, before: datetime, batch: int) -> int:
    engine = await app.dbs.workspace(workspace_id)
    a = tables.audit_log
    b = a.alias("newer")
    newest = sa.select(sa.func.max(b.c.target_seq)).where(b.c.target == a.c.target).scalar_subquery()
    pruned = 0
    while True:
        async with write_transaction(engine) as conn:
            q = sa.select(a.c.id).where(a.c.at < before, a.c.target_seq < newest).order_by(a.c.id).limit(batch)
            ids = list((await conn.execute(q)).scalars())
            if ids:
                await _set_mark(conn, AUDIT_DELETABLE, max(ids))
                await conn.execute(sa.delete(a).where(a.c.id.in_(ids)))
                await _set_mark(conn, AUDIT_DELETABLE, 0)
                await _raise_mark(conn, AUDIT_PRUNED, max(ids))
        pruned += len(ids)
        if len(ids) < batch:
            return pruned
        await asyncio.sleep(0)


async def _set_mark(conn: AsyncConnection, name: str, value: int) -> None:
    m = tables.retention_marks
    if (await conn.execute(sa.update(m).where(m.c.name == name).values(value=value))).rowcount == 0:
        await conn.execute(sa.insert(m).values(name=name, value=value))


async def _raise_mark(conn: AsyncConnection, name: str, value: int) -> None:
    m = tables.retention_marks
    held = (await conn.execute(sa.select(m.c.value).where(m.c.name == name))).scalar()
    if held is None or int(held) < value:
        await _set_mark(conn, name, value)


async def pruned_through(app: AppContext, workspace_id: str) -> int:
    """The seq at or below which the workspace's events may have been pruned (0: none were)."""
    engine = await app.dbs.workspace(workspace_id)
    m = tables.retention_marks
    async with engine.connect() as conn:
        held = (await conn.execute(sa.select(m.c.value).where(m.c.name == EVENTS_PRUNED))).scalar()
    return int(held or 0)


async def check_resumable(app: AppContext, workspace_id: str, after_seq: int) -> None:
    """``Conflict`` when events after ``after_seq`` may have been pruned: a watcher resuming from there would miss
    some without knowing; it must load afresh and watch from now."""
    through = await pruned_through(app, workspace_id)
    if after_seq < through:
        raise Conflict(
            f"afterSeq {after_seq} is behind the retention horizon: events up to #{through} of this workspace were "
            "pruned (retention.eventsDays); load afresh and watch without afterSeq"
        )
