"""Clipboard crossing between a person's computer and a rig: per person and per direction, never a workspace
setting (rigs.md, Authentication 3).

- ``hostToRig`` (pasting into a rig) is allowed by default.
- ``rigToHost`` (copying out of a rig) asks: the clipboard lane and the ``clipboard_read`` verbs (``browser_use``,
  ``computer_use``) answer ``consent_required`` (403 on HTTP) until the person grants it, for ten minutes or always
  (``rig.clipboardGrant``). An agent's verbs pass: what they read stays with the agent's run. "Always allow"
  grants are listed, per person, under Settings, Server, Rigs, Clipboard access, where they are revoked.

Grants live in the server database (``rig_clipboard_grants``) and are read at each use, so a revocation takes
effect on the next copy. A revoked grant keeps its row (who revoked it and when) as the trail of consents.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core.clock import Clock
from hangar.core.db import write_transaction
from hangar.core.ids import new_id
from hangar.core.migrating import MigrationSet
from hangar.core.principal import Principal
from hangar.core.types import UtcDateTime
from hangar.errors import Forbidden
from hangar.rigs.hosts.tables import metadata as hosts_metadata
from hangar.rigs.model import Direction
from hangar.rpc.context import OpContext

DIRECTIONS: tuple[Direction, ...] = ("hostToRig", "rigToHost")
Default = Literal["allow", "ask"]
DEFAULTS: dict[Direction, Default] = {"hostToRig": "allow", "rigToHost": "ask"}
GRANT_MINUTES = 10

metadata = sa.MetaData()
grants_table = sa.Table(
    "rig_clipboard_grants",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("user_id", sa.String(36), nullable=False),
    sa.Column("direction", sa.String(16), nullable=False),
    sa.Column("granted_at", UtcDateTime(), nullable=False),
    sa.Column("expires_at", UtcDateTime()),  # None: always
    sa.Column("revoked_at", UtcDateTime()),
    sa.Column("revoked_by", sa.String(36)),
)
# The rigs part's one server migration set: these grants and the rig hosts' tables.
SERVER_MIGRATIONS = MigrationSet(
    "rigs_server", "server", Path(__file__).parents[1] / "server_migrations", tables=(metadata, hosts_metadata)
)


class ConsentRequired(Forbidden):
    """Copying out of a rig needs the person's consent first (a ten-minute grant, or always allow)."""

    code = "consent_required"


@dataclass(frozen=True)
class Grant:
    id: str
    user_id: str
    direction: Direction
    granted_at: datetime
    expires_at: datetime | None  # None: always

    @property
    def always(self) -> bool:
        return self.expires_at is None

    def active(self, now: datetime) -> bool:
        return self.expires_at is None or self.expires_at > now


@dataclass(frozen=True)
class Decision:
    allowed: bool
    why: str  # "default", "always", "grant" or "ask"
    until: datetime | None = None  # the end of the ten-minute grant that allows it


def decide(direction: Direction, grants: Iterable[Grant], now: datetime) -> Decision:
    """Whether one crossing may happen now: a direction allowed by default is; otherwise an always grant, then
    the latest unexpired timed grant; otherwise the person is asked."""
    if DEFAULTS[direction] == "allow":
        return Decision(True, "default")
    live = [g for g in grants if g.direction == direction and g.active(now)]
    if any(g.always for g in live):
        return Decision(True, "always")
    timed = [g.expires_at for g in live if g.expires_at is not None]
    if timed:
        return Decision(True, "grant", max(timed))
    return Decision(False, "ask")


def consent_message(direction: Direction) -> str:
    if direction == "hostToRig":
        return "pasting into rigs is turned off for you"
    return (
        "copying from a rig to your computer needs your consent: allow it for ten minutes "
        "(rig.clipboardGrant {direction: rigToHost, minutes: 10}), or always allow it under Settings, Server, "
        "Rigs, Clipboard access"
    )


class ClipboardGrants:
    """The grants in the server database."""

    def __init__(self, engine: AsyncEngine, clock: Clock) -> None:
        self._db = engine
        self._clock = clock

    def _row(self, row: Any) -> Grant:
        direction: Direction = "hostToRig" if row.direction == "hostToRig" else "rigToHost"
        return Grant(row.id, row.user_id, direction, row.granted_at, row.expires_at)

    async def active(self, user_id: str | None = None) -> list[Grant]:
        """Unrevoked, unexpired grants of one person (or everyone), oldest first."""
        t = grants_table
        now = self._clock.now()
        query = (
            sa.select(t.c.id, t.c.user_id, t.c.direction, t.c.granted_at, t.c.expires_at)
            .where(t.c.revoked_at.is_(None), sa.or_(t.c.expires_at.is_(None), t.c.expires_at > now))
            .order_by(t.c.granted_at, t.c.user_id, t.c.id)
        )
        if user_id is not None:
            query = query.where(t.c.user_id == user_id)
        async with self._db.connect() as conn:
            return [self._row(r) for r in (await conn.execute(query)).all()]

    async def decide(self, user_id: str, direction: Direction) -> Decision:
        if DEFAULTS[direction] == "allow":
            return decide(direction, (), self._clock.now())
        return decide(direction, await self.active(user_id), self._clock.now())

    async def require(self, principal: Principal, direction: Direction) -> Decision:
        """The crossing allowed for the person behind ``principal``, or ``ConsentRequired``: the one check of the
        clipboard lane and of the clipboard verbs, whichever way the clipboard reaches its caller. An agent's own
        verbs are not a crossing to anyone's computer (the clipboard stays with the agent's run, which is how
        agents get it): they pass."""
        if principal.agent_id is not None:
            return Decision(True, "agent")
        decision = await self.decide(principal.user_id, direction)
        if not decision.allowed:
            raise ConsentRequired(consent_message(direction))
        return decision

    async def grant(self, user_id: str, direction: Direction, minutes: int | None) -> Grant:
        now = self._clock.now()
        grant = Grant(new_id(), user_id, direction, now, None if minutes is None else now + timedelta(minutes=minutes))
        async with write_transaction(self._db) as conn:
            await conn.execute(
                grants_table.insert().values(
                    id=grant.id,
                    user_id=user_id,
                    direction=direction,
                    granted_at=grant.granted_at,
                    expires_at=grant.expires_at,
                )
            )
        return grant

    async def revoke(self, user_id: str, direction: Direction, by: str) -> int:
        """Revoke every active grant of one person in one direction; how many were."""
        t = grants_table
        now = self._clock.now()
        async with write_transaction(self._db) as conn:
            result = await conn.execute(
                t.update()
                .where(
                    t.c.user_id == user_id,
                    t.c.direction == direction,
                    t.c.revoked_at.is_(None),
                    sa.or_(t.c.expires_at.is_(None), t.c.expires_at > now),
                )
                .values(revoked_at=now, revoked_by=by)
            )
        return int(result.rowcount or 0)


def grants_of(ctx: OpContext) -> ClipboardGrants:
    return ClipboardGrants(ctx.app.dbs.server, ctx.app.clock)
