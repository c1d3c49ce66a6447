"""Credentials of the processes that work for a server from other hosts (``hangar worker``, ``hangar rig-host``):
one kind per role, each with its own text prefix and table, the same rules for all.

An admin mints one on the command line; its text is ``<prefix><id>_<secret>``, shown once and never stored: the
database keeps the SHA-256 of the secret. A credential is scoped to its role: the RPC socket, the MCP endpoint,
``/metrics`` and every HTTP route authenticate device credentials only, so it is refused there
(``unauthenticated``) like any unknown text, and only the role's own door (the step queue for workers, the rig
hosts' socket for rig hosts) verifies it here. It is revocable: a revoked one is refused at its next check.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core.ids import new_id
from hangar.core.types import UtcDateTime
from hangar.errors import InvalidArgs, NotFound, Unauthenticated

NAME_MAX = 100


_BASE_COLUMNS = frozenset({"id", "name", "secret_hash", "created_at", "revoked_at"})


def credential_table(name: str, metadata: sa.MetaData, *limits: sa.Column[Any]) -> sa.Table:
    """A kind's table: one row per credential minted, the hash of its secret, when revoked, and the ``limits``
    columns of its kind (what an admin set when minting it: ``HostCredential.limits``)."""
    return sa.Table(
        name,
        metadata,
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(NAME_MAX), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False),  # SHA-256 of the secret, hex
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("revoked_at", UtcDateTime(), nullable=True),
        *limits,
    )


@dataclass(frozen=True)
class CredentialKind:
    """A role's credentials: ``label`` names them in messages (``worker credential``), ``prefix`` starts their
    text (``hwk_``), ``minted_by`` is the command that mints them, ``table`` holds them."""

    label: str
    prefix: str
    minted_by: str
    table: sa.Table
    # How ``hangar admin … list`` says a credential's limits (none: the kind has none).
    describe: Callable[[HostCredential], str] | None = None

    @property
    def shape(self) -> re.Pattern[str]:
        return re.compile(rf"^{re.escape(self.prefix)}([0-9a-f-]{{36}})_([A-Za-z0-9_-]{{43}})$")


@dataclass(frozen=True)
class HostCredential:
    id: str
    name: str
    created_at: datetime
    revoked_at: datetime | None
    # The kind's own columns (``credential_table``'s ``limits``) as the database holds them now.
    limits: Mapping[str, Any] = field(default_factory=dict)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _of(row: sa.Row[tuple[object, ...]]) -> HostCredential:
    limits = {k: v for k, v in row._mapping.items() if k not in _BASE_COLUMNS}
    return HostCredential(row.id, row.name, row.created_at, row.revoked_at, limits)


async def mint(
    kind: CredentialKind, engine: AsyncEngine, name: str, now: datetime, limits: Mapping[str, Any] | None = None
) -> tuple[HostCredential, str]:
    """A new credential of ``kind`` named ``name`` with its kind's ``limits`` (checked by the caller; columns
    left out take their defaults); returns it and its text (shown once)."""
    name = name.strip()
    if not name or len(name) > NAME_MAX:
        raise InvalidArgs(f"a {kind.label}'s name is 1 to {NAME_MAX} characters", field="name")
    cred_id, secret = new_id(), secrets.token_urlsafe(32)
    async with engine.begin() as conn:
        await conn.execute(
            kind.table.insert().values(
                id=cred_id, name=name, secret_hash=_digest(secret), created_at=now, revoked_at=None, **(limits or {})
            )
        )
        row = (await conn.execute(sa.select(kind.table).where(kind.table.c.id == cred_id))).one()
    return _of(row), f"{kind.prefix}{cred_id}_{secret}"


async def listed(kind: CredentialKind, engine: AsyncEngine) -> list[HostCredential]:
    async with engine.connect() as conn:
        rows = (await conn.execute(sa.select(kind.table).order_by(kind.table.c.created_at))).all()
    return [_of(r) for r in rows]


async def revoke(kind: CredentialKind, engine: AsyncEngine, cred_id: str, now: datetime) -> HostCredential:
    """Revoke ``cred_id`` (again: a no-op keeping the first time)."""
    c = kind.table.c
    async with engine.begin() as conn:
        await conn.execute(kind.table.update().where(c.id == cred_id, c.revoked_at.is_(None)).values(revoked_at=now))
        row = (await conn.execute(sa.select(kind.table).where(c.id == cred_id))).first()
    if row is None:
        raise NotFound(f"no {kind.label} {cred_id!r}")
    return _of(row)


async def verify(kind: CredentialKind, engine: AsyncEngine, text: str, *, revoked_too: bool = False) -> HostCredential:
    """The credential ``text`` is, if it is a live one of ``kind`` (or, ``revoked_too``, one revoked since: for
    what only ends something it began); else ``Unauthenticated`` saying why (never echoing it)."""
    found = kind.shape.match(text.strip())
    if found is None:
        raise Unauthenticated(f"the {kind.label} is not one {kind.minted_by} mints")
    cred_id, secret = found.groups()
    async with engine.connect() as conn:
        row = (await conn.execute(sa.select(kind.table).where(kind.table.c.id == cred_id))).first()
    if row is None or not hmac.compare_digest(row.secret_hash, _digest(secret)):
        raise Unauthenticated(f"the {kind.label} is not known to this database")
    if row.revoked_at is not None and not revoked_too:
        raise Unauthenticated(f"the {kind.label} {row.name!r} ({row.id}) was revoked")
    return _of(row)
