"""What the meeting-notes pipeline saves of a meeting: notes (a summary and enhanced notes), action items and
decisions, each in its own table. Saving only adds: a run that brought nothing (a degraded agent step, an empty
outcome) writes nothing and leaves every row saved earlier; an action item or decision already saved with the same
text is not saved twice, so running the pipeline again does not double them. An action item becomes a ticket once
(``link_ticket``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core.db import write_transaction
from hangar.core.ids import new_id
from hangar.errors import Conflict, NotFound
from hangar.meetings.tables import meeting_action_items, meeting_decisions, meeting_notes, meetings

MAX_ITEMS = 500  # action items, and decisions, of one meeting
OUTCOME_TABLES = (meeting_notes, meeting_action_items, meeting_decisions)


@dataclass(frozen=True)
class Notes:
    id: int
    summary: str
    enhanced_notes: str
    run_id: str | None
    created_at: datetime


@dataclass(frozen=True)
class ActionItem:
    id: str
    meeting_id: str
    text: str
    owner: str | None
    due: str | None
    ticket_id: str | None
    run_id: str | None
    created_at: datetime


@dataclass(frozen=True)
class Decision:
    id: int
    text: str
    run_id: str | None
    created_at: datetime


@dataclass(frozen=True)
class NewItem:
    text: str
    owner: str | None = None
    due: str | None = None


async def _exists(conn: Any, meeting_id: str) -> None:
    if (await conn.execute(sa.select(meetings.c.id).where(meetings.c.id == meeting_id))).first() is None:
        raise NotFound(f"meeting {meeting_id} not found in this workspace")


async def add_notes(
    engine: AsyncEngine, meeting_id: str, summary: str, enhanced: str, run_id: str | None, now: datetime
) -> bool:
    """A notes row, unless both texts are empty. Whether one was written (or was by an earlier try of the same
    run: a step re-run after its worker died saves its notes once)."""
    if not summary.strip() and not enhanced.strip():
        return False
    async with write_transaction(engine) as conn:
        await _exists(conn, meeting_id)
        n = meeting_notes.c
        same = sa.select(n.id).where(
            n.meeting_id == meeting_id, n.run_id == run_id, n.summary == summary, n.enhanced_notes == enhanced
        )
        if run_id is not None and (await conn.execute(same.limit(1))).first() is not None:
            return True
        await conn.execute(
            meeting_notes.insert().values(
                meeting_id=meeting_id, summary=summary, enhanced_notes=enhanced, run_id=run_id, created_at=now
            )
        )
    return True


async def _known_texts(conn: Any, table: sa.Table, meeting_id: str) -> set[str]:
    rows = await conn.execute(sa.select(table.c.text).where(table.c.meeting_id == meeting_id))
    return {r[0] for r in rows}


async def add_action_items(
    engine: AsyncEngine, meeting_id: str, items: Sequence[NewItem], run_id: str | None, now: datetime
) -> int:
    """The items not saved before (by text); how many were added."""
    async with write_transaction(engine) as conn:
        await _exists(conn, meeting_id)
        known = await _known_texts(conn, meeting_action_items, meeting_id)
        fresh = [i for i in dict((i.text, i) for i in items).values() if i.text not in known]
        if len(known) + len(fresh) > MAX_ITEMS:
            raise Conflict(f"a meeting holds at most {MAX_ITEMS} action items")
        if fresh:
            await conn.execute(
                meeting_action_items.insert(),
                [
                    {"id": new_id(), "meeting_id": meeting_id, "text": i.text, "owner": i.owner, "due": i.due,
                     "ticket_id": None, "run_id": run_id, "created_at": now}
                    for i in fresh
                ],
            )  # fmt: skip
    return len(fresh)


async def add_decisions(
    engine: AsyncEngine, meeting_id: str, texts: Sequence[str], run_id: str | None, now: datetime
) -> int:
    async with write_transaction(engine) as conn:
        await _exists(conn, meeting_id)
        known = await _known_texts(conn, meeting_decisions, meeting_id)
        fresh = [t for t in dict.fromkeys(texts) if t not in known]
        if len(known) + len(fresh) > MAX_ITEMS:
            raise Conflict(f"a meeting holds at most {MAX_ITEMS} decisions")
        if fresh:
            await conn.execute(
                meeting_decisions.insert(),
                [{"meeting_id": meeting_id, "text": t, "run_id": run_id, "created_at": now} for t in fresh],
            )
    return len(fresh)


async def notes_of(engine: AsyncEngine, meeting_id: str) -> list[Notes]:
    """Newest first."""
    q = sa.select(meeting_notes).where(meeting_notes.c.meeting_id == meeting_id).order_by(meeting_notes.c.id.desc())
    async with engine.connect() as conn:
        rows = (await conn.execute(q)).all()
    return [Notes(r.id, r.summary, r.enhanced_notes, r.run_id, r.created_at) for r in rows]


def _item(row: Any) -> ActionItem:
    return ActionItem(**{k: row._mapping[k] for k in ActionItem.__dataclass_fields__})


async def action_items_of(engine: AsyncEngine, meeting_id: str) -> list[ActionItem]:
    q = (
        sa.select(meeting_action_items)
        .where(meeting_action_items.c.meeting_id == meeting_id)
        .order_by(meeting_action_items.c.created_at, meeting_action_items.c.text)
    )
    async with engine.connect() as conn:
        return [_item(r) for r in (await conn.execute(q)).all()]


async def decisions_of(engine: AsyncEngine, meeting_id: str) -> list[Decision]:
    q = (
        sa.select(meeting_decisions)
        .where(meeting_decisions.c.meeting_id == meeting_id)
        .order_by(meeting_decisions.c.id)
    )
    async with engine.connect() as conn:
        return [Decision(r.id, r.text, r.run_id, r.created_at) for r in (await conn.execute(q)).all()]


async def action_item(engine: AsyncEngine, meeting_id: str, item_id: str) -> ActionItem:
    q = sa.select(meeting_action_items).where(
        meeting_action_items.c.id == item_id, meeting_action_items.c.meeting_id == meeting_id
    )
    async with engine.connect() as conn:
        row = (await conn.execute(q)).first()
    if row is None:
        raise NotFound(f"action item {item_id} not found in meeting {meeting_id}")
    return _item(row)


async def link_ticket(engine: AsyncEngine, item_id: str, ticket_id: str) -> str:
    """Record the item's ticket unless another caller linked one first; the ticket the item holds afterwards."""
    async with write_transaction(engine) as conn:
        row = (
            await conn.execute(sa.select(meeting_action_items.c.ticket_id).where(meeting_action_items.c.id == item_id))
        ).first()
        if row is None:
            raise NotFound(f"action item {item_id} was deleted meanwhile")
        if row[0] is not None:
            return str(row[0])
        await conn.execute(
            meeting_action_items.update().where(meeting_action_items.c.id == item_id).values(ticket_id=ticket_id)
        )
    return ticket_id
