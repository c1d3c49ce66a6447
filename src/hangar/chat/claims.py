"""Which server process holds a workspace's chat connection: a lease row in the workspace's database.

Several server processes may serve one set of records (one data directory on SQLite, one database on
PostgreSQL); a provider connection must be dialled by exactly one of them, or every event would be handled (and
answered) once per process. A process dials only while it holds the connection's row in
``chat_connection_claims``: it takes the row when it is absent or its lease has expired (one conditional
statement, so two takers never both win), renews it every ``ttl / 3`` and lets it go when it stops. A process
killed outright renews nothing: its lease runs out ``ttl`` after its last renewal and the next look of a live
process (every ``ttl / 3``) takes it over, so a connection is back within ``ttl * 4 / 3`` of the death.

Why a lease and not a lock the database drops with its holder's session (a PostgreSQL advisory lock, a ``flock``
on SQLite): a session lock is dropped when the database notices the session gone, which for a host that vanished
(power, network) is the TCP keepalive's minutes, while the holder itself cannot tell when it lost it and keeps
dialling meanwhile; one mechanism also serves both engines. The lease's holder fences itself instead: it stops
its connection once ``ttl * 2 / 3`` has passed since the start of its last good renewal, before the lease can
expire, so two processes never both dial (clocks of different hosts must agree to well within a third of
``ttl``: the expiry is written with the holder's clock and compared with the taker's).

The row also carries what the holder last said of the connection (state, error, whether streaming works), so the
status any process shows names the holder (host and process id) and its state, and a ``generation`` another
process bumps when it stores new credentials, so the holder dials again with them.

``InboundSeen`` makes inbound events at-least-once, shared by every process: an event (a provider's event id, a
slash command's envelope id) is recorded with the event itself and a claim (this process, until ``claim_ttl``)
when it arrives, *before* it is handled, and marked handled *after*. A copy arriving while the event is claimed
or once it is handled is dropped (at most one handler at a time, no second reply for a handled event). A process
that dies between the two (kill -9 after the provider's ack, before the reply) leaves the row unhandled: the next
holder of the connection (``orphans``, at its start and at every look) takes each unhandled row whose claim ran
out, by one conditional statement so two processes never both win, and handles it. An event whose handler died
after its effect (the agent run dispatched) and before the mark is answered by that run when handled again: its
id is derived from the event (``hangar.chat.answers``). Rows are kept ``SEEN_KEEP`` (the provider retries for
minutes, not hours); an event unhandled that long is not answered any more.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import sqlalchemy as sa

from hangar.chat.tables import chat_connection_claims, chat_inbound_seen
from hangar.core.context import AppContext

DEFAULT_TTL_S = 15.0
SEEN_KEEP = timedelta(hours=1)


@dataclass(frozen=True)
class Holder:
    """One server process: ``id`` is unique even when a process id is reused."""

    id: str
    host: str
    pid: int

    @classmethod
    def this_process(cls) -> Holder:
        host, pid = socket.gethostname(), os.getpid()
        return cls(f"{host}:{pid}:{uuid.uuid4().hex[:12]}", host, pid)


@dataclass(frozen=True)
class Claim:
    """A connection's row: who holds it, until when, and what the holder last said of it."""

    holder: Holder
    expires_at: Any
    generation: int
    state: str
    error: str | None
    streaming_available: bool


class ConnectionClaims:
    def __init__(self, app: AppContext, holder: Holder, ttl: float = DEFAULT_TTL_S) -> None:
        self._app = app
        self.holder = holder
        self.ttl = ttl

    @property
    def renew_every(self) -> float:
        return self.ttl / 3

    @property
    def fence_after(self) -> float:
        """How long after the start of its last good renewal a holder stops dialling: before its lease ends."""
        return self.ttl * 2 / 3

    def _mine(self, now: Any) -> dict[str, Any]:
        return {
            "holder": self.holder.id,
            "host": self.holder.host,
            "pid": self.holder.pid,
            "renewed_at": now,
            "expires_at": now + timedelta(seconds=self.ttl),
        }

    async def claim(self, workspace_id: str, provider: str) -> int | None:
        """Take the connection when nobody holds it (or the holder's lease ran out): its generation, else None."""
        t = chat_connection_claims
        now = self._app.clock.now()
        fresh = {**self._mine(now), "claimed_at": now, "state": "connecting", "error": None}
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            took = await conn.execute(
                sa.update(t)
                .where(t.c.provider == provider, sa.or_(t.c.expires_at <= now, t.c.holder == self.holder.id))
                .values(**fresh)
            )
            if took.rowcount == 1:
                return int((await conn.execute(sa.select(t.c.generation).where(t.c.provider == provider))).scalar_one())
        try:
            async with engine.begin() as conn:
                await conn.execute(
                    sa.insert(t).values(provider=provider, generation=0, streaming_available=False, **fresh)
                )
        except sa.exc.IntegrityError:  # another process inserted it first: theirs
            return None
        return 0

    async def renew(
        self, workspace_id: str, provider: str, *, state: str, error: str | None, streaming_available: bool
    ) -> int | None:
        """Extend this process's lease and say the connection's state: the generation, or None when the row is no
        longer this process's (it was taken after a lapse, or removed by a disconnect)."""
        t = chat_connection_claims
        now = self._app.clock.now()
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            done = await conn.execute(
                sa.update(t)
                .where(t.c.provider == provider, t.c.holder == self.holder.id)
                .values(**self._mine(now), state=state, error=error, streaming_available=streaming_available)
            )
            if done.rowcount != 1:
                return None
            return int((await conn.execute(sa.select(t.c.generation).where(t.c.provider == provider))).scalar_one())

    async def release(self, workspace_id: str, provider: str) -> None:
        """Give the connection up (this process stops): the next look of another process takes it at once."""
        t = chat_connection_claims
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            await conn.execute(sa.delete(t).where(t.c.provider == provider, t.c.holder == self.holder.id))

    async def forget(self, workspace_id: str, provider: str) -> None:
        """The workspace no longer wants the connection (disconnected): whoever holds it stops at its renewal."""
        t = chat_connection_claims
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            await conn.execute(sa.delete(t).where(t.c.provider == provider))

    async def bump(self, workspace_id: str, provider: str) -> None:
        """New credentials were stored: the holder dials again with them at its next renewal."""
        t = chat_connection_claims
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            await conn.execute(sa.update(t).where(t.c.provider == provider).values(generation=t.c.generation + 1))

    async def read(self, workspace_id: str, provider: str) -> Claim | None:
        """The connection's live claim (its lease not run out), else None."""
        t = chat_connection_claims
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            row = (await conn.execute(sa.select(t).where(t.c.provider == provider))).mappings().first()
        if row is None or row["expires_at"] <= self._app.clock.now():
            return None
        return Claim(
            Holder(row["holder"], row["host"], row["pid"]),
            row["expires_at"],
            row["generation"],
            row["state"],
            row["error"],
            bool(row["streaming_available"]),
        )


class InboundSeen:
    """The inbound events some process took to handle, shared by every process through the database."""

    def __init__(self, app: AppContext, claim_ttl: float = DEFAULT_TTL_S) -> None:
        self._app = app
        self.claim_ttl = claim_ttl

    async def receive(self, workspace_id: str, provider: str, key: str, event: str, holder: str) -> bool:
        """Record the event ``key`` (``event``: how to handle it again) as taken by ``holder`` before it is
        handled: True for the one caller of any process that is to handle it now. False: a copy (claimed by a
        live handler, or handled); an orphan (unhandled, its claim run out) is taken over, as ``take`` does."""
        t = chat_inbound_seen
        now = self._app.clock.now()
        engine = await self._app.dbs.workspace(workspace_id)
        row = {"holder": holder, "claimed_until": now + timedelta(seconds=self.claim_ttl), "event": event}
        try:
            async with engine.begin() as conn:
                await conn.execute(sa.insert(t).values(provider=provider, event_key=key[:128], seen_at=now, **row))
        except sa.exc.IntegrityError:
            return await self.take(workspace_id, provider, key, holder)
        return True

    async def take(self, workspace_id: str, provider: str, key: str, holder: str) -> bool:
        """Claim an unhandled event whose claim ran out (its handler died): True for the one taker that wins."""
        t = chat_inbound_seen
        now = self._app.clock.now()
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            took = await conn.execute(
                sa.update(t)
                .where(
                    t.c.provider == provider,
                    t.c.event_key == key[:128],
                    t.c.handled_at.is_(None),
                    t.c.claimed_until <= now,
                )
                .values(holder=holder, claimed_until=now + timedelta(seconds=self.claim_ttl))
            )
        return took.rowcount == 1

    async def handled(self, workspace_id: str, provider: str, key: str) -> None:
        """The event is handled: a copy from now on is dropped, and the event itself is not kept."""
        t = chat_inbound_seen
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            await conn.execute(
                sa.update(t)
                .where(t.c.provider == provider, t.c.event_key == key[:128])
                .values(handled_at=self._app.clock.now(), event=None)
            )

    async def orphans(self, workspace_id: str, provider: str) -> list[tuple[str, str]]:
        """The unhandled events whose claim ran out (their handler died), oldest first: (key, event)."""
        t = chat_inbound_seen
        now = self._app.clock.now()
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            rows = await conn.execute(
                sa.select(t.c.event_key, t.c.event)
                .where(
                    t.c.provider == provider,
                    t.c.handled_at.is_(None),
                    t.c.claimed_until <= now,
                    t.c.event.is_not(None),
                    t.c.seen_at > now - SEEN_KEEP,
                )
                .order_by(t.c.seen_at)
            )
            return [(str(r[0]), str(r[1])) for r in rows]

    async def prune(self, workspace_id: str) -> None:
        t = chat_inbound_seen
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            await conn.execute(sa.delete(t).where(t.c.seen_at < self._app.clock.now() - SEEN_KEEP))
