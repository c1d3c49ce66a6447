"""Dev domains: names under ``.test`` or ``.localhost`` that a space's browser rigs reach a rig's guest port by.

A row of ``rig_dev_domains`` (each workspace database) maps one domain to one port of one rig of the same space;
the domain is unique in the workspace. The rows are the authority, read on every use (routing a connection,
listing, answering a rig's resolver after a change): several processes share the data directory, so no process
keeps a copy that another could make stale. Routing itself lives in ``devrouter`` and ``devlanes``.

Accepted names (spec: ``name.test`` or ``name.localhost``, lower case, labels at most 63 characters): one or more
labels before the top-level ``test`` or ``localhost``, so ``app.test`` and also ``api.app.test`` (a project with
several services). Each label is letters, digits and inner hyphens; the whole name at most 253 characters. Nothing
is folded: ``App.test`` is refused (naming the lower-case form) rather than silently becoming another name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.core.types import UtcDateTime
from hangar.errors import Conflict, InvalidArgs

TOP_LEVELS: tuple[str, ...] = ("test", "localhost")
MAX_LABEL = 63
MAX_NAME = 253
_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$")

metadata = sa.MetaData()

rig_dev_domains = sa.Table(
    "rig_dev_domains",
    metadata,
    sa.Column("domain", sa.String(253), primary_key=True),
    sa.Column("space_id", sa.String(64), nullable=False),
    sa.Column("rig_id", sa.String(36), nullable=False),
    sa.Column("guest_port", sa.Integer, nullable=False),
    sa.Column("created_by", sa.String(200), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
)


def validate_domain(value: str, field: str = "domain") -> str:
    """``value`` when it is an acceptable dev domain; else ``InvalidArgs`` naming ``field`` and the rule."""
    if not value:
        raise InvalidArgs(f"{field} is required: a dev domain such as app.test", field=field)
    if value != value.lower():
        raise InvalidArgs(f"{field} must be lower case: use {value.lower()!r}", field=field)
    if len(value) > MAX_NAME:
        raise InvalidArgs(f"{field} has at most {MAX_NAME} characters", field=field)
    labels = value.split(".")
    if len(labels) < 2 or labels[-1] not in TOP_LEVELS:
        raise InvalidArgs(f"{field} must be name.test or name.localhost; {value!r} is neither", field=field)
    for label in labels[:-1]:
        if len(label) > MAX_LABEL:
            raise InvalidArgs(f"{field} has a label longer than {MAX_LABEL} characters", field=field)
        if not _LABEL.match(label):
            raise InvalidArgs(
                f"{field} has {label!r}, which is not a host name label (letters, digits and inner hyphens)",
                field=field,
            )
    return value


@dataclass(frozen=True)
class DevDomain:
    domain: str
    space_id: str
    rig_id: str
    guest_port: int
    created_by: str  # principal label
    created_at: datetime


def _row(row: Mapping[Any, Any]) -> DevDomain:
    return DevDomain(
        row["domain"], row["space_id"], row["rig_id"], row["guest_port"], row["created_by"], row["created_at"]
    )


async def domains_of(engine: AsyncEngine, space_id: str) -> list[DevDomain]:
    t = rig_dev_domains
    async with engine.connect() as conn:
        rows = (await conn.execute(sa.select(t).where(t.c.space_id == space_id).order_by(t.c.domain))).mappings()
        return [_row(r) for r in rows.all()]


async def find(engine: AsyncEngine, domain: str) -> DevDomain | None:
    t = rig_dev_domains
    async with engine.connect() as conn:
        row = (await conn.execute(sa.select(t).where(t.c.domain == domain))).mappings().first()
    return _row(row) if row is not None else None


async def put(conn: AsyncConnection, entry: DevDomain) -> None:
    """Map the domain (new, or re-pointed within its own space); ``Conflict`` when another space holds it. Runs in
    the caller's transaction (with the event announcing it)."""
    t = rig_dev_domains
    # a re-pointed domain is a new mapping: who made it and when are the latest change's
    values = {"rig_id": entry.rig_id, "guest_port": entry.guest_port, "created_by": entry.created_by,
              "created_at": entry.created_at}  # fmt: skip
    held = (await conn.execute(sa.select(t.c.space_id).where(t.c.domain == entry.domain))).scalar_one_or_none()
    taken = Conflict(f"{entry.domain} is already mapped in another space of this workspace")
    if held is None:
        try:
            await conn.execute(sa.insert(t).values(domain=entry.domain, space_id=entry.space_id, **values))
        except IntegrityError as exc:  # another process mapped it a moment ago (the caller's transaction ends)
            raise taken from exc
        return
    if held != entry.space_id:
        raise taken
    # the space condition again: another process may have moved it since the read
    done = await conn.execute(
        sa.update(t).where(t.c.domain == entry.domain, t.c.space_id == entry.space_id).values(**values)
    )
    if done.rowcount != 1:
        raise taken


async def delete(conn: AsyncConnection, space_id: str, domain: str) -> bool:
    """Remove the space's mapping of ``domain``; False when the space has none."""
    t = rig_dev_domains
    done = await conn.execute(sa.delete(t).where(t.c.domain == domain, t.c.space_id == space_id))
    return bool(done.rowcount)
