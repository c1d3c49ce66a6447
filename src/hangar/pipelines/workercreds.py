"""Worker credentials: what a ``hangar worker`` proves it may take pipeline steps with.

An admin mints one (``hangar admin worker-credential create``); its text is ``hwk_<id>_<secret>``, shown once
and never stored: the server keeps the SHA-256 of the secret. It is scoped to working: the RPC socket, the MCP
endpoint and every HTTP route authenticate device credentials only, so a worker credential is refused there
(``unauthenticated``) like any unknown text. It is revocable (``… revoke ID``): every claim a worker makes and
every heartbeat of a claim it holds checks in the same statement that its credential is not revoked, so a revoked
worker takes nothing more and its running claims are fenced at their next heartbeat.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core.ids import new_id
from hangar.errors import InvalidArgs, NotFound, Unauthenticated
from hangar.pipelines.queue_tables import worker_credentials

PREFIX = "hwk_"
_SHAPE = re.compile(r"^hwk_([0-9a-f-]{36})_([A-Za-z0-9_-]{43})$")
NAME_MAX = 100


@dataclass(frozen=True)
class WorkerCredential:
    id: str
    name: str
    created_at: datetime
    revoked_at: datetime | None


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


async def mint(engine: AsyncEngine, name: str, now: datetime) -> tuple[WorkerCredential, str]:
    """A new credential named ``name``; returns it and its text (shown once)."""
    name = name.strip()
    if not name or len(name) > NAME_MAX:
        raise InvalidArgs(f"a worker credential's name is 1 to {NAME_MAX} characters", field="name")
    cred_id, secret = new_id(), secrets.token_urlsafe(32)
    async with engine.begin() as conn:
        await conn.execute(
            worker_credentials.insert().values(
                id=cred_id, name=name, secret_hash=_digest(secret), created_at=now, revoked_at=None
            )
        )
    return WorkerCredential(cred_id, name, now, None), f"{PREFIX}{cred_id}_{secret}"


async def listed(engine: AsyncEngine) -> list[WorkerCredential]:
    async with engine.connect() as conn:
        rows = (await conn.execute(sa.select(worker_credentials).order_by(worker_credentials.c.created_at))).all()
    return [WorkerCredential(r.id, r.name, r.created_at, r.revoked_at) for r in rows]


async def revoke(engine: AsyncEngine, cred_id: str, now: datetime) -> WorkerCredential:
    """Revoke ``cred_id`` (again: a no-op keeping the first time)."""
    c = worker_credentials.c
    async with engine.begin() as conn:
        await conn.execute(
            worker_credentials.update().where(c.id == cred_id, c.revoked_at.is_(None)).values(revoked_at=now)
        )
        row = (await conn.execute(sa.select(worker_credentials).where(c.id == cred_id))).first()
    if row is None:
        raise NotFound(f"no worker credential {cred_id!r}")
    return WorkerCredential(row.id, row.name, row.created_at, row.revoked_at)


async def verify(engine: AsyncEngine, text: str) -> WorkerCredential:
    """The credential ``text`` is, if it is a live one; else ``Unauthenticated`` saying why (never echoing it)."""
    found = _SHAPE.match(text.strip())
    if found is None:
        raise Unauthenticated("the worker credential is not one hangar admin worker-credential create mints")
    cred_id, secret = found.groups()
    async with engine.connect() as conn:
        row = (await conn.execute(sa.select(worker_credentials).where(worker_credentials.c.id == cred_id))).first()
    if row is None or not hmac.compare_digest(row.secret_hash, _digest(secret)):
        raise Unauthenticated("the worker credential is not known to this database")
    if row.revoked_at is not None:
        raise Unauthenticated(f"the worker credential {row.name!r} ({row.id}) was revoked")
    return WorkerCredential(row.id, row.name, row.created_at, row.revoked_at)
