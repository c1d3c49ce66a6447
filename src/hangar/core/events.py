"""Domain events: typed classes, persisted per workspace with a sequence number, fanned out to async subscribers.

Publishing writes the event to the workspace database first (``domain_events.seq`` is the resume point), then
hands it to every matching subscriber. Each subscriber has its own queue and task, so a slow or failing
subscriber neither blocks the publisher nor the others. Consumers that must not miss events after a restart
(pipelines, the chat bridge) keep a cursor with ``set_cursor`` and call ``replay`` on start.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict

from hangar.core import tables
from hangar.core.clock import Clock
from hangar.core.db import Databases
from hangar.core.ids import new_id
from hangar.core.sqlite_writer import dt, js, transaction

log = logging.getLogger(__name__)


class DomainEvent(BaseModel):
    """Base of every domain event. Subclasses set ``type`` (a stable wire name) and add typed fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    type: ClassVar[str] = ""
    workspace_id: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__dict__.get("type"):
            raise TypeError(f"{cls.__name__} must set the class variable `type`")

    def payload(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude={"workspace_id"})


@dataclass(frozen=True)
class StoredEvent:
    """An event as persisted: its workspace, its sequence number there, and its payload."""

    workspace_id: str
    seq: int
    id: str
    type: str
    occurred_at: datetime
    payload: dict[str, Any]

    def parse(self, registry: EventRegistry) -> DomainEvent | None:
        return registry.parse(self.type, self.workspace_id, self.payload)


class EventRegistry:
    """The event classes the server knows, registered explicitly by each part."""

    def __init__(self, classes: Iterable[type[DomainEvent]] = ()) -> None:
        self._by_type: dict[str, type[DomainEvent]] = {}
        for cls in classes:
            self.register(cls)

    def register(self, cls: type[DomainEvent]) -> None:
        known = self._by_type.get(cls.type)
        if known is not None and known is not cls:
            raise ValueError(f"event type {cls.type!r} is registered twice ({known.__name__}, {cls.__name__})")
        self._by_type[cls.type] = cls

    def get(self, type_name: str) -> type[DomainEvent] | None:
        return self._by_type.get(type_name)

    def parse(self, type_name: str, workspace_id: str, payload: dict[str, Any]) -> DomainEvent | None:
        cls = self._by_type.get(type_name)
        if cls is None:
            return None
        return cls.model_validate({**payload, "workspace_id": workspace_id})

    @property
    def types(self) -> list[str]:
        return sorted(self._by_type)


Handler = Callable[[StoredEvent], Awaitable[None]]


@transaction
def _insert_event(conn: sqlite3.Connection, ev_id: str, type_name: str, at: str | None, payload: str | None) -> int:
    cur = conn.execute(
        "INSERT INTO domain_events (id, type, occurred_at, payload) VALUES (?, ?, ?, ?)",
        (ev_id, type_name, at, payload),
    )
    return int(cur.lastrowid or 0)


@dataclass(eq=False)
class Subscription:
    name: str
    handler: Handler
    types: frozenset[str] | None
    workspace_id: str | None
    queue: asyncio.Queue[StoredEvent] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None

    def matches(self, ev: StoredEvent) -> bool:
        if self.workspace_id is not None and ev.workspace_id != self.workspace_id:
            return False
        return self.types is None or ev.type in self.types

    async def _run(self) -> None:
        while True:
            ev = await self.queue.get()
            try:
                await self.handler(ev)
            except Exception:
                log.exception("event subscriber %s failed on %s #%s", self.name, ev.type, ev.seq)
            finally:
                self.queue.task_done()

    async def drain(self) -> None:
        """Wait until every event queued so far has been handled."""
        await self.queue.join()


class EventBus:
    def __init__(self, dbs: Databases, clock: Clock, registry: EventRegistry | None = None) -> None:
        self._dbs = dbs
        self._clock = clock
        self.registry = registry or EventRegistry()
        self._subs: list[Subscription] = []
        self._closed = False

    async def publish(self, event: DomainEvent) -> StoredEvent:
        """Persist ``event`` in its workspace database, then deliver it to subscribers."""
        if self.registry.get(event.type) is None:
            self.registry.register(type(event))
        return await self.publish_raw(event.workspace_id, event.type, event.payload())

    async def publish_raw(self, workspace_id: str, type_name: str, payload: dict[str, Any]) -> StoredEvent:
        """Persist and deliver an event given by wire name (for events named at run time, e.g. from a CLI)."""
        writer = await self._dbs.writer(workspace_id)
        ev_id = new_id()
        at = self._clock.now()
        seq = await writer.call(_insert_event, ev_id, type_name, dt(at), js(payload))
        stored = StoredEvent(workspace_id, seq, ev_id, type_name, at, payload)
        self._deliver(stored)
        return stored

    def _deliver(self, ev: StoredEvent) -> None:
        for sub in self._subs:
            if sub.matches(ev):
                sub.queue.put_nowait(ev)

    def subscribe(
        self,
        handler: Handler,
        *,
        name: str,
        types: Iterable[str] | None = None,
        workspace_id: str | None = None,
    ) -> Subscription:
        sub = Subscription(name, handler, frozenset(types) if types is not None else None, workspace_id)
        sub.task = asyncio.get_running_loop().create_task(sub._run(), name=f"events:{name}")
        self._subs.append(sub)
        return sub

    async def unsubscribe(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)
        if sub.task is not None:
            sub.task.cancel()
            await asyncio.gather(sub.task, return_exceptions=True)
            sub.task = None

    async def drain(self) -> None:
        """Wait until every subscriber has handled what was published so far (for tests and shutdown)."""
        await asyncio.gather(*(s.drain() for s in list(self._subs)))

    async def replay(
        self,
        workspace_id: str,
        *,
        after_seq: int = 0,
        types: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[StoredEvent]:
        engine = await self._dbs.workspace(workspace_id)
        t = tables.domain_events
        q = sa.select(t).where(t.c.seq > after_seq).order_by(t.c.seq)
        if types is not None:
            q = q.where(t.c.type.in_(list(types)))
        if limit is not None:
            q = q.limit(limit)
        async with engine.connect() as conn:
            rows = (await conn.execute(q)).mappings().all()
        return [
            StoredEvent(workspace_id, r["seq"], r["id"], r["type"], r["occurred_at"], dict(r["payload"])) for r in rows
        ]

    async def cursor(self, workspace_id: str, consumer: str) -> int:
        engine = await self._dbs.workspace(workspace_id)
        t = tables.event_cursors
        async with engine.connect() as conn:
            seq = (await conn.execute(sa.select(t.c.seq).where(t.c.consumer == consumer))).scalar()
        return int(seq or 0)

    async def set_cursor(self, workspace_id: str, consumer: str, seq: int) -> None:
        engine = await self._dbs.workspace(workspace_id)
        t = tables.event_cursors
        async with engine.begin() as conn:
            updated = await conn.execute(sa.update(t).where(t.c.consumer == consumer).values(seq=seq))
            if updated.rowcount == 0:
                await conn.execute(sa.insert(t).values(consumer=consumer, seq=seq))

    async def aclose(self) -> None:
        self._closed = True
        for sub in list(self._subs):
            await self.unsubscribe(sub)
