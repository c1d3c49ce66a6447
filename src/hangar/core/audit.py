"""The append-only audit log of a workspace.

Each row records who (principal), did what (action), to what (target), with a sequence number that is
monotonic per target. Content that must not be stored (typed text, clipboard) goes through ``sensitive``,
which keeps only its length and SHA-256. The table refuses UPDATE and DELETE by trigger. Each row also says
which door the call that wrote it came through (``DOOR``: the RPC socket or the MCP endpoint), whichever code
path wrote it while the call was served. Work a call leaves running in the background (a task it started that
goes on after the answer) writes rows with no door: by then nobody is calling through one.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from hangar.core import tables
from hangar.core.clock import Clock
from hangar.core.db import Databases
from hangar.core.ids import sha256_hex
from hangar.core.write_conn import WriteConnection, transaction


@dataclass(eq=False)
class Door:
    """One call through a door. A task started during the call inherits this very object with the context, so
    marking the call answered reaches the tasks it left behind as well."""

    name: str  # ``socket``, ``mcp``
    serving: bool = True


# Set by the RPC layer around each op it serves (``through``); ``None`` for work no caller started.
DOOR: ContextVar[Door | None] = ContextVar("hangar_audit_door", default=None)


class through:
    """A call served through the door ``name``: rows written until it returns carry the door. (A class rather
    than a generator-based context manager: it wraps every op call.)"""

    __slots__ = ("_door", "_token")

    def __init__(self, name: str) -> None:
        self._door = Door(name)

    def __enter__(self) -> None:
        self._token = DOOR.set(self._door)

    def __exit__(self, *exc: object) -> None:
        self._door.serving = False
        DOOR.reset(self._token)


def current_door() -> str | None:
    """The door of the call being served, or None (no call, or the call already answered)."""
    door = DOOR.get()
    return door.name if door is not None and door.serving else None


def sensitive(content: str | bytes) -> dict[str, Any]:
    """What may be stored about content that must not be: its length and digest."""
    raw = content.encode() if isinstance(content, str) else content
    return {"length": len(raw), "sha256": sha256_hex(raw)}


@dataclass(frozen=True)
class AuditEntry:
    id: int
    at: datetime
    principal: str
    action: str
    target: str
    target_seq: int
    details: dict[str, Any]
    door: str | None = None


@transaction
def _append(
    conn: WriteConnection,
    at: datetime,
    principal: str,
    action: str,
    target: str,
    details: dict[str, Any],
    door: str | None,
) -> int:
    """One entry; the write transaction (which holds the write lock) keeps the per-target sequence gap-free across
    processes."""
    row = conn.execute("SELECT max(target_seq) FROM audit_log WHERE target = ?", (target,)).fetchone()
    seq = int(row[0] or 0) + 1
    conn.execute(
        "INSERT INTO audit_log (at, principal, action, target, target_seq, details, door) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (conn.dt(at), principal, action, target, seq, conn.js(details), door),
    )
    return seq


class AuditLog:
    def __init__(self, dbs: Databases, clock: Clock) -> None:
        self._dbs = dbs
        self._clock = clock

    async def append(
        self,
        workspace_id: str,
        *,
        principal: str,
        action: str,
        target: str,
        details: dict[str, Any] | None = None,
    ) -> int:
        """Record one entry; returns its per-target sequence number."""
        writer = await self._dbs.writer(workspace_id)
        at = self._clock.now()
        seq: int = await writer.call(_append, at, principal, action, target, details or {}, current_door())
        return seq

    def seed(
        self, *, principal: str, action: str, target: str, details: dict[str, Any] | None = None
    ) -> Callable[[WriteConnection], int]:
        """Writes one entry into a database being built (``Databases.create_workspace``)."""
        row = (self._clock.now(), principal, action, target, details or {}, current_door())
        return lambda conn: _append(conn, *row)

    async def entries(
        self,
        workspace_id: str,
        *,
        target: str | None = None,
        action: str | None = None,
        principal: str | None = None,
        door: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 500,
        newest: bool = False,
    ) -> list[AuditEntry]:
        """Entries matching every filter given, oldest first; with ``newest``, the last ``limit`` of them, newest
        first (what a person reading the log wants to see first)."""
        engine = await self._dbs.workspace(workspace_id)
        t = tables.audit_log
        q = sa.select(t).order_by(t.c.id.desc() if newest else t.c.id).limit(limit)
        for column, value in ((t.c.target, target), (t.c.action, action), (t.c.principal, principal)):
            if value is not None:
                q = q.where(column == value)
        if door is not None:
            # ``none``: rows no caller's door wrote (work the server started itself).
            q = q.where(t.c.door.is_(None) if door == "none" else t.c.door == door)
        if since is not None:
            q = q.where(t.c.at >= since)
        if until is not None:
            q = q.where(t.c.at < until)
        async with engine.connect() as conn:
            rows = (await conn.execute(q)).mappings().all()
        return [AuditEntry(**{k: r[k] for k in AuditEntry.__dataclass_fields__}) for r in rows]
