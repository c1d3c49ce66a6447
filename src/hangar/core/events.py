"""Domain events: typed classes, persisted per workspace with a sequence number, fanned out to async subscribers.

Publishing writes the event to the workspace database first (``domain_events.seq`` is the resume point), then
hands it to every matching subscriber. Each subscriber has its own queue and task, so a slow or failing
subscriber neither blocks the publisher nor the others. Consumers that must not miss events after a restart
(pipelines, the chat bridge) keep a cursor with ``set_cursor`` and call ``replay`` on start.

A record and its event are written in one transaction (``transaction``): a kill between the two can no longer
leave a record no watcher or consumer ever hears of.

Delivery is in sequence order per workspace, exactly once per process: the bus keeps, per workspace, the last
sequence number it delivered, hands over an event it just wrote when it is the next one, and otherwise reads the
gap from the database. Events other processes record (the CLI, a second server) are found by the tail, while the
bus tails (``start``); the table is always the truth, what tells the bus to read it depends on the database:

- SQLite (one data directory): the bus checks every workspace's last sequence number every ``tail_interval``
  seconds (one indexed read each, no thread hop) and delivers what is new, so events reach this process's
  subscribers within that interval.
- PostgreSQL (several servers on one database): each committed insert of events sends a NOTIFY naming its
  workspace and newest seq (``hangar.core.triggers.event_notify_sql``, which also makes seqs follow commit
  order). One dedicated connection per process listens (``hangar.core.event_listener``) and wakes the bus for
  that workspace, which reads the new rows. A notification is only a wake-up: the bus catches up every
  workspace from its last delivered seq when the listener (re)connects and every ``catchup_interval`` seconds, so
  a notification lost with the connection loses no event. Nothing polls at ``tail_interval`` there.

Workspaces created after the tail started are delivered from their first event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.core import tables
from hangar.core.clock import Clock
from hangar.core.db import Databases, write_transaction
from hangar.core.dbfailures import Paused
from hangar.core.event_types import DomainEvent, EventRegistry, StoredEvent
from hangar.core.ids import new_id
from hangar.core.postgresql import workspace_schema
from hangar.core.write_conn import WriteConnection, transaction

if TYPE_CHECKING:
    from hangar.core.event_listener import EventListener, Wakeups

log = logging.getLogger(__name__)


Handler = Callable[[StoredEvent], Awaitable[None]]
_GAP_PAGE = 1000


_SQL_INSERT = "INSERT INTO domain_events (id, type, occurred_at, payload) VALUES (?, ?, ?, ?)"


def insert_event(conn: WriteConnection, ev_id: str, type_name: str, at: datetime, payload: Any) -> int:
    """One event row in the caller's transaction; its sequence number."""
    return conn.insert(_SQL_INSERT, (ev_id, type_name, conn.dt(at), conn.js(payload)), "seq")


_insert_event = transaction(insert_event)


@transaction
def _insert_event_once(conn: WriteConnection, ev_id: str, type_name: str, at: datetime, payload: Any) -> int | None:
    """Insert unless the workspace already holds an event with this id (a relay carried it before)."""
    if conn.execute("SELECT 1 FROM domain_events WHERE id = ?", (ev_id,)).fetchone() is not None:
        return None
    return insert_event(conn, ev_id, type_name, at, payload)


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


class EventTransaction:
    """The caller's records and their events, committed together (see ``EventBus.transaction``)."""

    def __init__(self, bus: EventBus, workspace_id: str, conn: AsyncConnection) -> None:
        self._bus = bus
        self.workspace_id = workspace_id
        self.conn = conn
        self.staged: list[StoredEvent] = []

    async def publish(self, event: DomainEvent) -> StoredEvent:
        """Write ``event`` in this transaction; subscribers get it once the transaction commits."""
        if event.workspace_id != self.workspace_id:
            raise ValueError(f"event of workspace {event.workspace_id} staged in workspace {self.workspace_id}")
        payload = self._bus.know(event)
        ev_id, at = new_id(), self._bus.now()
        result = await self.conn.execute(
            sa.insert(tables.domain_events).values(id=ev_id, type=event.type, occurred_at=at, payload=payload)
        )
        stored = StoredEvent(self.workspace_id, int(result.inserted_primary_key[0]), ev_id, event.type, at, payload)  # type: ignore[index]
        self.staged.append(stored)
        return stored


WorkspaceLister = Callable[[], Awaitable[list[str]]]
Stamp = Callable[[], Awaitable[int]]


class EventBus:
    def __init__(
        self,
        dbs: Databases,
        clock: Clock,
        registry: EventRegistry | None = None,
        *,
        tail_interval: float = 0.25,
        catchup_interval: float = 5.0,
    ) -> None:
        """``tail_interval``: seconds between two reads of the tail on SQLite. ``catchup_interval``: on PostgreSQL,
        seconds between two safety catch-ups of every workspace (notifications deliver in between), also the
        listener connection's heartbeat."""
        self._dbs = dbs
        self._clock = clock
        self.registry = registry or EventRegistry()
        self.tail_interval = tail_interval
        self.catchup_interval = catchup_interval
        self.listener: EventListener | None = None  # PostgreSQL's, while the bus tails
        self._wakeups: Wakeups | None = None  # what the listener heard since the last pass
        self._schemas: dict[str, str] = {}  # PostgreSQL schema -> id of the workspaces tailed
        self._subs: list[Subscription] = []
        self._closed = False
        self._delivered: dict[str, int] = {}  # workspace -> last sequence number handed to subscribers
        self._pumps: dict[str, asyncio.Lock] = {}
        self._tail: asyncio.Task[None] | None = None
        self._tailed: set[str] = set()
        self._known_at_start: set[str] = set()
        self._failing: set[str] = set()

    def now(self) -> datetime:
        return self._clock.now()

    def know(self, event: DomainEvent) -> dict[str, Any]:
        """The payload of ``event``, checked. Only the event types the parts declare (``Part.events``) are
        recorded: the registry is the list of what can happen, and a type nobody declared could not be parsed
        back, documented or reserved. The payload must read back as the event (its model validates what it
        wrote), so what is stored and sent is what the declared model says."""
        if self.registry.get(event.type) is not type(event):
            raise ValueError(
                f"event type {event.type!r} ({type(event).__name__}) is not declared by any part: "
                "list it in its Part(events=[...])"
            )
        return self.registry.checked_payload(event.type, event.payload())

    async def publish(self, event: DomainEvent) -> StoredEvent:
        """Persist ``event`` in its workspace database, then deliver it to subscribers."""
        return await self._record(event.workspace_id, event.type, self.know(event))

    async def publish_raw(self, workspace_id: str, type_name: str, payload: dict[str, Any]) -> StoredEvent:
        """Persist and deliver an event given by wire name (for events named at run time, e.g. from a CLI); a
        declared type's payload must match its model."""
        return await self._record(workspace_id, type_name, self.registry.checked_payload(type_name, payload))

    async def _record(self, workspace_id: str, type_name: str, payload: dict[str, Any]) -> StoredEvent:
        writer = await self._dbs.writer(workspace_id)
        ev_id = new_id()
        at = self._clock.now()
        seq = await writer.call(_insert_event, ev_id, type_name, at, payload)
        stored = StoredEvent(workspace_id, seq, ev_id, type_name, at, payload)
        await self._advance(workspace_id, [stored])
        return stored

    async def publish_once(
        self, workspace_id: str, ev_id: str, type_name: str, at: datetime, payload: dict[str, Any]
    ) -> StoredEvent | None:
        """Persist and deliver an event written elsewhere first (the outbox), unless it is here already. The
        outbox may hold it as written before payloads went camelCase: it is recorded in wire form."""
        payload = self.registry.wire_payload(type_name, workspace_id, payload)
        writer = await self._dbs.writer(workspace_id)
        seq = await writer.call(_insert_event_once, ev_id, type_name, at, payload)
        if seq is None:
            return None
        stored = StoredEvent(workspace_id, seq, ev_id, type_name, at, payload)
        await self._advance(workspace_id, [stored])
        return stored

    def seed(self, event: DomainEvent) -> Callable[[WriteConnection], int]:
        """Writes ``event`` into a database being built (``Databases.create_workspace``); ``created`` delivers
        it once the workspace exists."""
        row = (new_id(), event.type, self._clock.now(), self.know(event))
        return lambda conn: _insert_event(conn, *row)

    async def created(self, workspace_id: str) -> None:
        """A workspace this process just created: deliver its events from the first one."""
        self._delivered.setdefault(workspace_id, 0)
        await self._advance(workspace_id)

    async def committed(self, workspace_id: str, events: Sequence[StoredEvent]) -> None:
        """Deliver events the caller committed itself (with its own records, on its own connection)."""
        await self._advance(workspace_id, events)

    @contextlib.asynccontextmanager
    async def transaction(self, workspace_id: str, *, serialized: bool = False) -> AsyncIterator[EventTransaction]:
        """One transaction of the workspace database for the caller's records and the events announcing them
        (``tx.publish``); the events are delivered after it commits, and not at all if it rolls back.

        ``serialized``: the transaction holds the write lock from its first statement (``write_transaction``), for
        check-then-act: what it reads cannot change before it writes, in this process or another."""
        engine = await self._dbs.workspace(workspace_id)
        begin = write_transaction(engine) if serialized else engine.begin()
        async with begin as conn:
            tx = EventTransaction(self, workspace_id, conn)
            yield tx
        if tx.staged:
            await self._advance(workspace_id, tx.staged)

    async def _advance(self, workspace_id: str, written: Sequence[StoredEvent] = ()) -> None:
        """Deliver, in sequence order, every event of the workspace after the last one delivered; ``written``
        are events this process just committed (handed over without reading them back when they come next)."""
        lock = self._pumps.get(workspace_id)
        if lock is None:
            lock = self._pumps[workspace_id] = asyncio.Lock()
        async with lock:
            last = self._delivered.get(workspace_id)
            if last is None:
                # First sight of this workspace here: what came before is history (replayed by whoever needs it),
                # unless the workspace is new since the tail started.
                if self._is_new(workspace_id):
                    last = 0
                elif written:
                    last = min(e.seq for e in written) - 1
                else:
                    last = await self._last_seq(workspace_id)
            fresh = sorted((e for e in written if e.seq > last), key=lambda e: e.seq)
            if written and not fresh:
                pass  # the tail delivered them already
            elif fresh and all(e.seq == last + 1 + i for i, e in enumerate(fresh)):
                for ev in fresh:
                    self._deliver(ev)
                last = fresh[-1].seq
            else:
                while page := await self.replay(workspace_id, after_seq=last, limit=_GAP_PAGE):
                    for ev in page:
                        self._deliver(ev)
                    last = page[-1].seq
            self._delivered[workspace_id] = last

    def _is_new(self, workspace_id: str) -> bool:
        return self._tail is not None and workspace_id not in self._known_at_start

    async def _last_seq(self, workspace_id: str) -> int:
        return await self._dbs.last_event_seq(workspace_id)

    # -- following other processes ------------------------------------------------------------------------

    @property
    def following(self) -> bool:
        """Whether this bus follows other processes (a server's does; a command's does not)."""
        return self._tail is not None

    async def start(
        self, workspaces: WorkspaceLister, changed: Stamp, *, on_change: Callable[[], Awaitable[object]] | None = None
    ) -> None:
        """Tail every workspace for events other processes record. ``workspaces`` lists the workspace ids;
        ``changed`` is a counter that moves when one is created (they are re-listed then, and ``on_change``
        runs: the outbox relay)."""
        if self._tail is not None:
            return
        ids = await workspaces()
        self._known_at_start = set(ids)
        url = self._dbs.postgresql_url
        if url is not None:
            from hangar.core.event_listener import EventListener, Wakeups  # psycopg loads only for PostgreSQL

            self._wakeups = heard = Wakeups()
            self.listener = EventListener(url, heard.notified, heard.connected, heartbeat=self.catchup_interval)
        for ws in ids:
            await self._track(ws)
        self._tail = asyncio.get_running_loop().create_task(
            self._follow(workspaces, changed, on_change), name="events:tail"
        )
        if self.listener is not None:
            self.listener.start()  # its first connect catches up what committed since the reads above

    async def _track(self, workspace_id: str) -> None:
        if workspace_id in self._tailed:
            return
        try:
            if workspace_id not in self._delivered:
                self._delivered[workspace_id] = 0 if self._is_new(workspace_id) else await self._last_seq(workspace_id)
        except Exception as exc:  # a damaged workspace is reported by the databases; the rest is tailed
            self._report(workspace_id, exc)
            return
        self._tailed.add(workspace_id)
        if self.listener is not None:
            self._schemas[workspace_schema(workspace_id)] = workspace_id

    def forget(self, workspace_id: str) -> None:
        """Stop tailing a workspace that is being deleted (its database is about to go)."""
        self._tailed.discard(workspace_id)
        self._failing.discard(workspace_id)
        self._delivered.pop(workspace_id, None)
        for schema in [s for s, ws in self._schemas.items() if ws == workspace_id]:
            del self._schemas[schema]

    def _report(self, workspace_id: str, exc: Exception) -> None:
        if workspace_id not in self._failing:
            self._failing.add(workspace_id)
            log.warning("events of workspace %s are not followed: %s", workspace_id, exc)

    async def _follow(
        self, workspaces: WorkspaceLister, changed: Stamp, on_change: Callable[[], Awaitable[object]] | None
    ) -> None:
        seen = await changed()
        paused = Paused("following other processes' events", log)
        again = False  # a pass failed: the next reads every workspace (what it was woken for included)
        while not self._closed:  # besides the cancellation ``aclose`` sends, which an await may have missed
            full, woken = await self._next_pass()
            full, again = full or again, False
            try:
                # A notification from a schema not tailed yet: a workspace created since the last listing.
                relist = any(schema not in self._schemas for schema in woken)
                if full and (now := await changed()) != seen:
                    seen, relist = now, True
                if relist:
                    for ws in await workspaces():
                        await self._track(ws)
                    if on_change is not None:
                        await on_change()
                if full:
                    await self.poll()
                for schema, seq in woken.items():
                    if (named := self._schemas.get(schema)) is not None:
                        await self._pump(named, seq)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                again = True
                if not paused.failed(exc):
                    log.exception("following other processes' events failed; retrying")
                await asyncio.sleep(self.tail_interval)  # not at once: the database may be away a while
            else:
                paused.ok()

    async def _next_pass(self) -> tuple[bool, dict[str, int]]:
        """Wait for the next pass of the tail: whether it reads every workspace (SQLite: every pass), and the
        schemas notified since the last (PostgreSQL)."""
        if self._wakeups is None:
            await asyncio.sleep(self.tail_interval)
            return True, {}
        return await self._wakeups.next(self.catchup_interval)

    async def poll(self) -> None:
        """One pass of the tail: deliver what other processes recorded since the last pass."""
        for ws in list(self._tailed):
            await self._pump(ws)

    async def _pump(self, workspace_id: str, announced: int | None = None) -> None:
        """Deliver what is new in the workspace (``announced``: the seq a notification named, which spares reading
        the newest)."""
        try:
            top = await self._last_seq(workspace_id) if announced is None else announced
            if top > self._delivered.get(workspace_id, 0):
                await self._advance(workspace_id)
            self._failing.discard(workspace_id)
        except Exception as exc:
            self._report(workspace_id, exc)

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
        last: int | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[StoredEvent]:
        """Events after ``after_seq``, oldest first: the first ``limit`` of them, or with ``last`` the last ones;
        with ``since``/``until`` only those that occurred at or after ``since`` and before ``until``."""
        engine = await self._dbs.workspace(workspace_id)
        t = tables.domain_events
        q = sa.select(t).where(t.c.seq > after_seq).order_by(t.c.seq.desc() if last is not None else t.c.seq)
        if types is not None:
            q = q.where(t.c.type.in_(list(types)))
        if since is not None:
            q = q.where(t.c.occurred_at >= since)
        if until is not None:
            q = q.where(t.c.occurred_at < until)
        if last is not None:
            q = q.limit(last)
        elif limit is not None:
            q = q.limit(limit)
        async with engine.connect() as conn:
            rows = (await conn.execute(q)).mappings().all()
        if last is not None:
            rows = list(reversed(rows))
        # Rows recorded before payloads went camelCase are read in snake_case and handed over in wire form.
        return [self._stored(workspace_id, r) for r in rows]

    def _stored(self, workspace_id: str, row: Any) -> StoredEvent:
        # A row recorded before payloads went camelCase is read in snake_case and handed over in wire form.
        payload = self.registry.wire_payload(row["type"], workspace_id, dict(row["payload"]))
        return StoredEvent(workspace_id, row["seq"], row["id"], row["type"], row["occurred_at"], payload)

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
        if self.listener is not None:
            await self.listener.aclose()
        if self._tail is not None:
            self._tail.cancel()
            await asyncio.gather(self._tail, return_exceptions=True)
        for sub in list(self._subs):
            await self.unsubscribe(sub)
