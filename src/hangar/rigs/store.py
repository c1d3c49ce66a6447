"""Rig records and the rig action log, in each workspace database (schema in ``rigs/migrations``).

``rig_sessions`` keeps one row per rig for its whole life and after (a closed rig's row survives for the audit
trail). ``rig_action_log`` records every input event on a rig with its principal and a sequence number that is
monotonic per rig; content that must not be stored (typed text, clipboard, exec commands, terminal input)
arrives here already reduced by ``hangar.core.audit.sensitive`` to a length and a SHA-256.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.core.clock import Clock
from hangar.core.db import Databases
from hangar.core.migrating import MigrationSet
from hangar.core.types import UtcDateTime
from hangar.core.write_conn import WriteConnection, transaction
from hangar.rigs.devdomains import names as devdomains
from hangar.rigs.model import LIVE_PHASES, CloseReason, Phase, RigRecord, Surface

metadata = sa.MetaData()

rig_sessions = sa.Table(
    "rig_sessions",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("space_id", sa.String(64), nullable=False),
    sa.Column("surface", sa.String(16), nullable=False),
    sa.Column("engine", sa.String(16), nullable=True),
    sa.Column("backend", sa.String(32), nullable=False),
    sa.Column("phase", sa.String(16), nullable=False),
    sa.Column("status_detail", sa.String(500), nullable=False),
    sa.Column("close_reason", sa.String(32), nullable=True),
    sa.Column("controller", sa.String(64), nullable=True),
    sa.Column("opened_by", sa.String(200), nullable=False),
    sa.Column("memory_mb", sa.Integer, nullable=False),
    sa.Column("vcpus", sa.Integer, nullable=False),
    sa.Column("display", sa.String(16), nullable=True),
    sa.Column("resident_mb", sa.Integer, nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("updated_at", UtcDateTime(), nullable=False),
    sa.Column("closed_at", UtcDateTime(), nullable=True),
    sa.Column("server_url", sa.String(300), nullable=True),
)

rig_action_log = sa.Table(
    "rig_action_log",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("rig_id", sa.String(36), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("at", UtcDateTime(), nullable=False),
    sa.Column("principal", sa.String(200), nullable=False),
    sa.Column("verb", sa.String(64), nullable=False),
    sa.Column("outcome", sa.String(16), nullable=False),
    sa.Column("details", sa.JSON, nullable=False),
)


@transaction
def _append_action(
    conn: WriteConnection, rig_id: str, at: datetime, principal: str, verb: str, outcome: str, details: dict[str, Any]
) -> int:
    """One action row; the write transaction keeps the per-rig sequence gap-free, across processes too."""
    row = conn.execute("SELECT max(seq) FROM rig_action_log WHERE rig_id = ?", (rig_id,)).fetchone()
    seq = int(row[0] or 0) + 1
    conn.execute(
        "INSERT INTO rig_action_log (rig_id, seq, at, principal, verb, outcome, details) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (rig_id, seq, conn.dt(at), principal, verb, outcome, conn.js(details)),
    )
    return seq


MIGRATIONS = MigrationSet(
    "rigs", "workspace", Path(__file__).parent / "migrations", tables=(metadata, devdomains.metadata)
)

_SETTABLE = frozenset({"phase", "status_detail", "close_reason", "controller", "resident_mb", "closed_at", "display"})


@dataclass(frozen=True)
class ActionEntry:
    rig_id: str
    seq: int
    at: datetime
    principal: str
    verb: str
    outcome: str  # "ok", "refused", "error"
    details: dict[str, Any]


def _record(row: Mapping[Any, Any]) -> RigRecord:
    return RigRecord(
        id=row["id"],
        space_id=row["space_id"],
        surface=Surface(row["surface"]),
        engine=row["engine"],
        backend=row["backend"],
        phase=Phase(row["phase"]),
        status_detail=row["status_detail"],
        close_reason=CloseReason(row["close_reason"]) if row["close_reason"] else None,
        controller=row["controller"],
        opened_by=row["opened_by"],
        memory_mb=row["memory_mb"],
        vcpus=row["vcpus"],
        display=row["display"],
        resident_mb=row["resident_mb"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        closed_at=row["closed_at"],
        server_url=row["server_url"],
    )


class RigStore:
    def __init__(self, dbs: Databases, clock: Clock) -> None:
        self._dbs = dbs
        self._clock = clock

    async def _engine(self, ws: str) -> AsyncEngine:
        return await self._dbs.workspace(ws)

    async def insert(
        self,
        ws: str,
        *,
        rig_id: str,
        space_id: str,
        surface: Surface,
        engine: str | None,
        backend: str,
        opened_by: str,
        memory_mb: int,
        vcpus: int,
        display: str | None,
        server_url: str | None,
    ) -> RigRecord:
        now = self._clock.now()
        values: dict[str, Any] = {
            "id": rig_id,
            "space_id": space_id,
            "surface": surface.value,
            "engine": engine,
            "backend": backend,
            "phase": Phase.provisioning.value,
            "status_detail": "starting",
            "close_reason": None,
            "controller": None,
            "opened_by": opened_by,
            "memory_mb": memory_mb,
            "vcpus": vcpus,
            "display": display,
            "resident_mb": 0,
            "created_at": now,
            "updated_at": now,
            "closed_at": None,
            "server_url": server_url,
        }
        async with (await self._engine(ws)).begin() as conn:
            await conn.execute(sa.insert(rig_sessions).values(**values))
        return _record(values)

    async def update(self, ws: str, rig_id: str, *, conn: AsyncConnection | None = None, **fields: Any) -> None:
        """Change a rig's row; within ``conn``'s transaction when given (a change and its event commit
        together)."""
        unknown = set(fields) - _SETTABLE
        if unknown:
            raise ValueError(f"rig_sessions has no settable fields {sorted(unknown)}")
        values = {k: (v.value if isinstance(v, Phase | CloseReason) else v) for k, v in fields.items()}
        values["updated_at"] = self._clock.now()
        statement = sa.update(rig_sessions).where(rig_sessions.c.id == rig_id).values(**values)
        if conn is not None:
            await conn.execute(statement)
            return
        async with (await self._engine(ws)).begin() as own:
            await own.execute(statement)

    async def get(self, ws: str, rig_id: str) -> RigRecord | None:
        async with (await self._engine(ws)).connect() as conn:
            row = (await conn.execute(sa.select(rig_sessions).where(rig_sessions.c.id == rig_id))).mappings().first()
        return _record(row) if row is not None else None

    async def rigs(self, ws: str, *, include_closed: bool = False) -> list[RigRecord]:
        q = sa.select(rig_sessions).order_by(rig_sessions.c.created_at, rig_sessions.c.id)
        if not include_closed:
            q = q.where(rig_sessions.c.phase.in_([p.value for p in LIVE_PHASES | {Phase.closing}]))
        async with (await self._engine(ws)).connect() as conn:
            rows = (await conn.execute(q)).mappings().all()
        return [_record(r) for r in rows]

    async def append_action(
        self,
        ws: str,
        rig_id: str,
        *,
        principal: str,
        verb: str,
        outcome: str = "ok",
        details: dict[str, Any] | None = None,
        at: datetime | None = None,
    ) -> int:
        """Record one input event (at ``at``, now unless given: a folded run of screenshots is dated by its
        first); returns its per-rig sequence number."""
        writer = await self._dbs.writer(ws)
        at = at or self._clock.now()
        seq: int = await writer.call(_append_action, rig_id, at, principal, verb, outcome, details or {})
        return seq

    async def actions(self, ws: str, rig_id: str) -> list[ActionEntry]:
        t = rig_action_log
        async with (await self._engine(ws)).connect() as conn:
            rows = (await conn.execute(sa.select(t).where(t.c.rig_id == rig_id).order_by(t.c.seq))).mappings().all()
        return [
            ActionEntry(r["rig_id"], r["seq"], r["at"], r["principal"], r["verb"], r["outcome"], dict(r["details"]))
            for r in rows
        ]
