"""Retention passes: a running server deletes domain events older than ``retention.eventsDays`` and audit rows
older than ``retention.auditDays`` in every workspace database, once every ``PASS_EVERY``.

Each check (every ``tick`` seconds) reads the settings afresh, so an admin's change binds at the next pass without a
restart. Servers sharing a data directory take turns on ``<dataDir>/retention.lock`` (``hangar.core.turns``, as
scheduled backups do); servers sharing a PostgreSQL database, each with its own data directory, take turns on the
record: a pass claims its turn by writing its first row in the server database under the write lock, and only when
no pass started within ``PASS_EVERY``. What is deleted and what is kept whatever its age is
``hangar.core.retention``'s. Every pass writes one row per database (``retention_runs``): how many events and
audit rows went, or why that database could not be pruned; the server's own row also counts the rows of older
passes it removed (they are kept as long as audit rows).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from hangar.core.context import AppContext
from hangar.core.db import write_transaction
from hangar.core.ids import new_id
from hangar.core.retention import EventFloors, Pruned, prune_workspace
from hangar.core.settings import SettingSpec, strict_int
from hangar.core.turns import taking_turn
from hangar.retention.tables import retention_runs

log = logging.getLogger("hangar.retention")

EVENTS_SETTING = "retention.eventsDays"
AUDIT_SETTING = "retention.auditDays"
DEFAULT_EVENTS_DAYS = 90
DEFAULT_AUDIT_DAYS = 365
MAX_DAYS = 36500  # a hundred years; 0 keeps for ever
TICK_S = 60.0
PASS_EVERY = timedelta(hours=1)
SERVER = "server"

SPECS = [
    SettingSpec(
        EVENTS_SETTING,
        f"Days domain events are kept before a retention pass deletes them (default {DEFAULT_EVENTS_DAYS}; 0: for "
        f"ever; at most {MAX_DAYS}). Events still needed are kept whatever their age.",
        strict_int(EVENTS_SETTING, 0, MAX_DAYS),
    ),
    SettingSpec(
        AUDIT_SETTING,
        f"Days audit rows are kept before a retention pass deletes them (default {DEFAULT_AUDIT_DAYS}; 0: for ever; "
        f"at most {MAX_DAYS}). The newest row of each target is kept.",
        strict_int(AUDIT_SETTING, 0, MAX_DAYS),
    ),
]


@dataclass(frozen=True)
class Horizons:
    """Rows older than these are pruned (None: kept for ever)."""

    events: datetime | None
    audit: datetime | None


@dataclass(frozen=True)
class PassRecord:
    database: str
    events: int
    audit: int
    error: str | None


class RetentionSchedule:
    def __init__(self, app: AppContext, tick: float = TICK_S, every: timedelta = PASS_EVERY) -> None:
        self.app = app
        self.tick = tick
        self.every = every

    async def days(self, key: str, default: int) -> int:
        from hangar.identity import IdentityService

        value: Any = await self.app.service(IdentityService).get_setting(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default

    async def horizons(self, now: datetime) -> Horizons:
        events = await self.days(EVENTS_SETTING, DEFAULT_EVENTS_DAYS)
        audit = await self.days(AUDIT_SETTING, DEFAULT_AUDIT_DAYS)
        return Horizons(
            events=now - timedelta(days=events) if events else None,
            audit=now - timedelta(days=audit) if audit else None,
        )

    async def pass_once(self) -> list[PassRecord] | None:
        """Prune if no pass started within ``every``; what was pruned per database, or None (not this one's turn
        or not due, or nothing is pruned: both settings 0)."""
        return await self._pass(self.app.clock.now(), due_only=True)

    async def prune_now(self, now: datetime | None = None) -> list[PassRecord] | None:
        """Prune whether or not a pass is due (None: another process holds the turn); ``now`` stands for the
        clock (tests place the horizon to the second)."""
        return await self._pass(now or self.app.clock.now(), due_only=False)

    async def _pass(self, now: datetime, *, due_only: bool) -> list[PassRecord] | None:
        horizons = await self.horizons(now)
        if horizons.events is None and horizons.audit is None:
            return None
        with taking_turn(self.app.datadir.root / "retention.lock") as mine:
            if not mine:
                return None
            pass_id = await self._claim(now, due_only)
            if pass_id is None:
                return None
            return await self._prune(pass_id, now, horizons)

    async def _claim(self, now: datetime, due_only: bool) -> str | None:
        """Write the pass's server row unless, with ``due_only``, a pass started within ``every``."""
        r = retention_runs
        pass_id = new_id()
        async with write_transaction(self.app.dbs.server) as conn:
            if due_only:
                last = (
                    await conn.execute(sa.select(sa.func.max(r.c.started_at)).where(r.c.database == SERVER))
                ).scalar()
                if last is not None and now - last < self.every:
                    return None
            await conn.execute(
                sa.insert(r).values(
                    id=pass_id, pass_id=pass_id, started_at=now, database=SERVER, events=0, audit=0, error=None
                )
            )
        return pass_id

    async def _prune(self, pass_id: str, now: datetime, horizons: Horizons) -> list[PassRecord]:
        from hangar.identity import usable_workspace_ids

        floors = self.app.service(EventFloors)
        records: list[PassRecord] = []
        for workspace_id in await usable_workspace_ids(self.app):
            started = self.app.clock.now()
            try:
                pruned = await prune_workspace(
                    self.app, workspace_id, events_before=horizons.events, audit_before=horizons.audit, floors=floors
                )
                record = PassRecord(workspace_id, pruned.events, pruned.audit, None)
            except Exception as exc:  # one damaged workspace must not keep the others from being pruned
                log.exception("retention: pruning workspace %s failed", workspace_id)
                record = PassRecord(workspace_id, 0, 0, f"{type(exc).__name__}: {exc}"[:500])
            await self._record(pass_id, started, record)
            records.append(record)
        server = PassRecord(SERVER, 0, await self._prune_server(pass_id, horizons), None)
        async with self.app.dbs.server.begin() as conn:
            await conn.execute(
                sa.update(retention_runs)
                .where(retention_runs.c.id == pass_id)
                .values(finished_at=self.app.clock.now(), audit=server.audit)
            )
        records.append(server)
        total = Pruned(sum(r.events for r in records), sum(r.audit for r in records))
        log.info(
            "retention: pruned %d events and %d audit rows in %d databases", total.events, total.audit, len(records)
        )
        return records

    async def _prune_server(self, pass_id: str, horizons: Horizons) -> int:
        """The server database holds no events or audit rows of its own (its events reach the workspaces through
        the outbox, never pruned): its history is the rows of earlier passes, kept as long as audit rows."""
        if horizons.audit is None:
            return 0
        r = retention_runs
        async with self.app.dbs.server.begin() as conn:
            gone = await conn.execute(sa.delete(r).where(r.c.started_at < horizons.audit, r.c.pass_id != pass_id))
        return int(gone.rowcount or 0)

    async def _record(self, pass_id: str, started: datetime, record: PassRecord) -> None:
        row = {
            "id": new_id(),
            "pass_id": pass_id,
            "started_at": started,
            "finished_at": self.app.clock.now(),
            "database": record.database,
            "events": record.events,
            "audit": record.audit,
            "error": record.error,
        }
        async with self.app.dbs.server.begin() as conn:
            await conn.execute(sa.insert(retention_runs).values(**row))

    async def last_pass(self) -> tuple[datetime, datetime | None, list[PassRecord]] | None:
        """The latest pass: when it started, when it finished (None: under way, or its process died), and its
        row per database (the server's last)."""
        r = retention_runs
        async with self.app.dbs.server.connect() as conn:
            head = (
                await conn.execute(
                    sa.select(r).where(r.c.database == SERVER).order_by(r.c.started_at.desc(), r.c.id).limit(1)
                )
            ).first()
            if head is None:
                return None
            rows = (
                await conn.execute(
                    sa.select(r).where(r.c.pass_id == head.pass_id, r.c.id != head.id).order_by(r.c.database)
                )
            ).all()
        records = [PassRecord(row.database, row.events, row.audit, row.error) for row in rows]
        records.append(PassRecord(SERVER, head.events, head.audit, head.error))
        return head.started_at, head.finished_at, records
