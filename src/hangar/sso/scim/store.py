"""SCIM Users over the server's users, and Groups as a read-only view of workspaces.

Every user but the server owner (the install's operator, whom no identity provider may deactivate) is a SCIM
User. A user who arrived another way (invited, paired, signed in just in time) gets a SCIM record on first
sight, named by their email, so an identity provider looking for ``userName eq "<email>"`` finds them instead
of creating a twin. The stored representation is the provider's (canonical form); ``users`` keeps what the
rest of the server reads (email, display name) and ``deactivated_at``, which is SCIM's ``active``. DELETE is
soft: the user is deactivated (devices revoked), the record answers 404 from then on and its userName is free.
Writes are serialised by one lock, so the uniqueness check and the insert cannot interleave.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql.elements import ColumnElement

from hangar.core.clock import Clock
from hangar.core.db import write_transaction
from hangar.core.portable_sql import insert_ignoring, json_rows, unindexed
from hangar.errors import NotFound
from hangar.identity import SETTING_OWNER, IdentityService
from hangar.identity import tables as identity_tables
from hangar.sso.scim.errors import ScimBadRequest, ScimUniqueness
from hangar.sso.scim.index import index_rows
from hangar.sso.scim.match import Bound, FilterSemanticError, fold
from hangar.sso.scim.patch import apply_patch
from hangar.sso.scim.render import document, fixed_parts, groups_json, stamp
from hangar.sso.scim.resource import canonical, require_user_name
from hangar.sso.scim.schema import GROUP_URN, user_schema
from hangar.sso.scim.sql import to_sql
from hangar.sso.scim.tables import scim_users, scim_values

users = identity_tables.users
memberships = identity_tables.memberships
workspaces = identity_tables.workspaces


def derive_email(resource: dict[str, Any]) -> str | None:
    """The address the rest of the server knows the user by: the primary email, else the first, else an
    email-shaped userName."""
    emails = [e for e in resource.get("emails") or [] if isinstance(e, dict) and isinstance(e.get("value"), str)]
    primary = [e for e in emails if e.get("primary") is True]
    for candidate in (*primary, *emails):
        if "@" in candidate["value"]:
            return str(candidate["value"])[:320]
    name = resource.get("userName")
    return name[:320] if isinstance(name, str) and "@" in name else None


def derive_display_name(resource: dict[str, Any]) -> str:
    name = resource.get("name") if isinstance(resource.get("name"), dict) else {}
    assert isinstance(name, dict)
    joined = " ".join(p for p in (name.get("givenName"), name.get("familyName")) if isinstance(p, str) and p)
    for candidate in (resource.get("displayName"), name.get("formatted"), joined, resource.get("userName")):
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip()[:200]
    return "user"


SORT_IN_MEMORY_BELOW = 1000
# A page read by walking the listing order with per-user probes visits about (offset + count) * users / matches
# users; past this many, building the match list once and walking with it costs less.
WALK_BUDGET = 3000
_LISTING_ORDER: tuple[ColumnElement[Any], ...] = (scim_users.c.created_at, scim_users.c.user_id)
_UNINDEXED_ORDER: tuple[ColumnElement[Any], ...] = (
    unindexed(scim_users.c.created_at),
    unindexed(scim_users.c.user_id),
)


_USERS_COUNT = sa.select(sa.func.count()).select_from(users).scalar_subquery()
# What a page shows of each user: the record, SCIM's ``active`` and the workspaces (the read-only ``groups``), in
# one statement; the membership time as text, which sorts as the time does (SQLite's stored string, PostgreSQL's
# rendering of a timestamp in the session's zone).
_GROUPS = (
    sa.select(json_rows(sa.cast(memberships.c.created_at, sa.Text), workspaces.c.id, workspaces.c.name))
    .join(workspaces, workspaces.c.id == memberships.c.workspace_id)
    .where(memberships.c.user_id == scim_users.c.user_id)
    .scalar_subquery()
)
_PAGE = sa.select(
    scim_users.c.user_id,
    scim_users.c.rendered,
    scim_users.c.version,
    users.c.deactivated_at.is_not(None).label("deactivated"),
    _GROUPS.label("groups"),
).join(users, users.c.id == scim_users.c.user_id)


class ScimDirectory:
    def __init__(self, engine: AsyncEngine, identity: IdentityService, clock: Clock) -> None:
        self._db = engine
        self._identity = identity
        self._clock = clock
        self._lock = asyncio.Lock()
        self._owner_id: str | None = None
        self._owner_known = False
        self._known_users: int | None = None

    async def _owner(self) -> str | None:
        """The server owner's id, read again only after ``sync`` saw the users change (the owner is a user)."""
        if not self._owner_known:
            owner = await self._identity.get_setting(SETTING_OWNER)
            self._owner_id = owner if isinstance(owner, str) else None
            self._owner_known = True
        return self._owner_id

    # -- reading ---------------------------------------------------------------------------------------------

    def _live(self, owner: str | None, indexed: bool = True) -> list[ColumnElement[bool]]:
        """The records listed. ``indexed=False`` keeps the listing index out of the planner's choice."""
        deleted = scim_users.c.deleted_at if indexed else unindexed(scim_users.c.deleted_at)
        live: list[ColumnElement[bool]] = [deleted.is_(None)]
        return [*live, scim_users.c.user_id != owner] if owner else live

    async def sync(self, known: int | None = None) -> None:
        """Give every user without a SCIM record one. Users are never deleted, so an unchanged count of users
        means nothing to do: one ``count(*)`` per request in the common case, asked for in the same statement as
        the request's own count when the caller has one (``known``)."""
        if known is None:
            async with self._db.connect() as conn:
                known = (await conn.execute(sa.select(_USERS_COUNT))).scalar_one()
        if known == self._known_users:
            return
        self._owner_known = False
        owner = await self._owner()
        async with self._db.connect() as conn:
            missing = (
                await conn.execute(
                    sa.select(users.c.id, users.c.email, users.c.display_name, users.c.created_at)
                    .outerjoin(scim_users, scim_users.c.user_id == users.c.id)
                    .where(scim_users.c.user_id.is_(None), users.c.id != (owner or ""))
                )
            ).all()
            taken = (
                {r[0] for r in (await conn.execute(sa.select(scim_users.c.user_name_lc))).all()} if missing else set()
            )
        rows = []
        for uid, email, display_name, created_at in missing:
            name = email if email and fold(email) not in taken else uid
            taken.add(fold(name))
            resource: dict[str, Any] = {"userName": name, "displayName": display_name, "active": True}
            if email:
                resource["emails"] = [{"value": email, "primary": True}]
            rows.append(
                {
                    "user_id": uid,
                    "user_name": name,
                    "user_name_lc": fold(name),
                    "external_id": None,
                    "resource": resource,
                    "created_at": created_at,
                    "updated_at": created_at,
                    "version": 1,
                }
            )
        if rows:
            async with write_transaction(self._db) as conn:
                await insert_records(conn, rows, or_ignore=True)
                for row in rows:
                    await reindex(conn, row["user_id"], row["resource"])
        if self._known_users is None:
            await self._fill_rendered()
        self._known_users = known

    async def _fill_rendered(self) -> None:
        """Render the records stored without ``rendered`` (from before the column, or cleared to be rebuilt);
        once per process, at the first request. A write in between wins: it always sets ``rendered``."""
        async with self._db.connect() as conn:
            found = (
                await conn.execute(
                    sa.select(*_RENDER_FROM).where(scim_users.c.rendered.is_(None), scim_users.c.deleted_at.is_(None))
                )
            ).all()
        if found:
            fill = (
                sa.update(scim_users)
                .where(scim_users.c.user_id == sa.bindparam("uid"), scim_users.c.rendered.is_(None))
                .values(rendered=sa.bindparam("text"))
            )
            async with self._db.begin() as conn:
                await conn.execute(fill, [{"uid": r.user_id, "text": fixed_parts(*r)} for r in found])

    async def get(self, user_id: str, base_url: str) -> dict[str, Any]:
        await self.sync()
        owner = await self._owner()
        async with self._db.connect() as conn:
            q = _PAGE.where(*self._live(owner), scim_users.c.user_id == user_id)
            row = (await conn.execute(q)).first()
            if row is None:
                raise NotFound(f"no user {user_id}")
            found: dict[str, Any] = json.loads((await _documents(conn, [row], base_url))[0])
        return found

    async def search(
        self, bound: Bound | None, start_index: int, count: int, base_url: str
    ) -> tuple[int, list[dict[str, Any]]]:
        """``(totalResults, page)`` for a filter, with 1-based ``start_index`` (see ``search_json``)."""
        total, page = await self.search_json(bound, start_index, count, base_url)
        return total, [json.loads(text) for text in page]

    async def search_json(
        self, bound: Bound | None, start_index: int, count: int, base_url: str
    ) -> tuple[int, list[str]]:
        """``(totalResults, page)`` for a filter, with 1-based ``start_index``; each user as JSON text.

        One count of the matches (subqueries evaluated once, as lists), then the page. One match: read by the
        key the count found. Few matches: found by the filter's own indexes and sorted. Many: the listing order
        is walked until the page is full, the filter's subqueries probed per user, so a page of an unselective
        filter reads about ``count`` users instead of building every match list again. Deep pages into a
        sparse result fall back to the lists."""
        for _ in range(2):
            owner = await self._owner()
            live = self._live(owner)
            try:
                listed = [*live, to_sql(bound)] if bound is not None else live
            except FilterSemanticError as exc:
                raise ScimBadRequest("invalidFilter", f"filter: {exc}") from None
            async with self._db.connect() as conn:
                # The first match's seq comes with the count: a lookup (one match) then reads its page by key
                # instead of evaluating the filter again.
                matched = sa.select(sa.func.count().label("n"), sa.func.min(scim_users.c.seq).label("first"))
                found = matched.where(*listed).subquery()
                known, total, first = (await conn.execute(sa.select(_USERS_COUNT, found.c.n, found.c.first))).one()
                if known == self._known_users:
                    rows = await self._page(conn, bound, owner, int(total), first, start_index, count)
                    return int(total), await _documents(conn, rows, base_url)
            await self.sync(known)  # users came (or it is the first request): count again with their records
        raise RuntimeError("users kept arriving while counting SCIM matches")  # pragma: no cover

    async def _page(
        self,
        conn: Any,
        bound: Bound | None,
        owner: str | None,
        total: int,
        first: int | None,
        start_index: int,
        count: int,
    ) -> list[Any]:
        if count <= 0 or total < start_index:
            return []
        if total == 1:
            return list((await conn.execute(_PAGE.where(*self._live(owner), scim_users.c.seq == first))).all())
        visits = (start_index - 1 + count) * max(total, self._known_users or 0) / total
        if total <= SORT_IN_MEMORY_BELOW:
            # Found from the filter's own index (or list) and sorted: the unary pluses keep SQLite, which has no
            # statistics here, from walking the listing order over every user instead.
            live, correlated, by = self._live(owner, indexed=False), False, _UNINDEXED_ORDER
        else:
            live, correlated, by = self._live(owner), visits <= WALK_BUDGET, _LISTING_ORDER
        where = [*live, to_sql(bound, correlated)] if bound is not None else live
        page_q = _PAGE.where(*where).order_by(*by).limit(count).offset(start_index - 1)
        return list((await conn.execute(page_q)).all())

    # -- writing ---------------------------------------------------------------------------------------------

    async def _check_unique(self, conn: Any, user_name: str, user_id: str | None) -> None:
        q = sa.select(scim_users.c.user_id).where(scim_users.c.user_name_lc == fold(user_name))
        if user_id is not None:
            q = q.where(scim_users.c.user_id != user_id)
        if (await conn.execute(q)).first() is not None:
            raise ScimUniqueness(f"userName {user_name!r} is already taken")

    async def create(self, payload: Any, base_url: str) -> dict[str, Any]:
        resource = canonical(user_schema(), payload)
        name = require_user_name(resource)
        resource["userName"] = name
        # A new user is active unless the provider says otherwise, and says so in its representation.
        active = resource.setdefault("active", True)
        async with self._lock:
            await self.sync()
            async with self._db.connect() as conn:
                await self._check_unique(conn, name, None)
            user = await self._identity.create_user(
                email=derive_email(resource), display_name=derive_display_name(resource)
            )
            now = self._clock.now()
            async with write_transaction(self._db) as conn:
                record = {
                    "user_id": user.id,
                    "user_name": name,
                    "user_name_lc": fold(name),
                    "external_id": resource.get("externalId"),
                    "resource": resource,
                    "created_at": now,
                    "updated_at": now,
                    "version": 1,
                }
                await insert_records(conn, [record])
                await reindex(conn, user.id, resource)
            if active is False:
                await self._identity.deactivate_user(user.id)
        return await self.get(user.id, base_url)

    async def replace(self, user_id: str, payload: Any, base_url: str) -> dict[str, Any]:
        resource = canonical(user_schema(), payload)
        async with self._lock:
            await self.get(user_id, base_url)
            await self._write(user_id, resource)
        return await self.get(user_id, base_url)

    async def patch(self, user_id: str, body: Any, base_url: str) -> dict[str, Any]:
        async with self._lock:
            current = await self.get(user_id, base_url)
            patched = apply_patch(user_schema(), current, body)
            await self._write(user_id, canonical(user_schema(), patched))
        return await self.get(user_id, base_url)

    async def _write(self, user_id: str, resource: dict[str, Any]) -> None:
        """Store a full new representation (validated), then bring ``users`` in line with it."""
        name = require_user_name(resource)
        resource["userName"] = name
        active = resource.get("active")
        async with write_transaction(self._db) as conn:
            await self._check_unique(conn, name, user_id)
            created_at = (
                await conn.execute(sa.select(scim_users.c.created_at).where(scim_users.c.user_id == user_id))
            ).scalar_one()
            now = self._clock.now()
            external_id = resource.get("externalId")
            await conn.execute(
                sa.update(scim_users)
                .where(scim_users.c.user_id == user_id)
                .values(
                    user_name=name,
                    user_name_lc=fold(name),
                    external_id=external_id,
                    resource=resource,
                    updated_at=now,
                    version=scim_users.c.version + 1,
                    rendered=fixed_parts(user_id, name, external_id, resource, created_at, now),
                )
            )
            await reindex(conn, user_id, resource)
        user = await self._identity.get_user(user_id)
        assert user is not None
        email = derive_email(resource) or user.email
        display = derive_display_name(resource)
        if (email, display) != (user.email, user.display_name):
            await self._identity.update_user(user_id, email=email, display_name=display)
        if active is False and user.active:
            await self._identity.deactivate_user(user_id)
        elif active is not False and not user.active:
            await self._identity.reactivate_user(user_id)

    async def delete(self, user_id: str, base_url: str) -> None:
        async with self._lock:
            await self.get(user_id, base_url)
            async with self._db.begin() as conn:
                await conn.execute(
                    sa.update(scim_users)
                    .where(scim_users.c.user_id == user_id)
                    .values(deleted_at=self._clock.now(), user_name_lc=None)
                )
                await reindex(conn, user_id, None)
            user = await self._identity.get_user(user_id)
            if user is not None and user.active:
                await self._identity.deactivate_user(user_id)

    # -- groups (workspaces, read-only) ---------------------------------------------------------------------

    async def groups(self, base_url: str) -> list[dict[str, Any]]:
        owner = await self._owner()
        out = []
        for ws_id in await self._identity.list_workspace_ids():
            ws = await self._identity.get_workspace(ws_id)
            if ws is None:
                continue
            members = [m for m in await self._identity.members(ws_id) if m.user_id != owner]
            out.append(
                {
                    "schemas": [GROUP_URN],
                    "id": ws.id,
                    "displayName": ws.name,
                    "members": [
                        {
                            "value": m.user_id,
                            "display": m.display_name,
                            "type": "User",
                            "$ref": f"{base_url}/Users/{m.user_id}",
                        }
                        for m in members
                    ],
                    "meta": {
                        "resourceType": "Group",
                        "created": stamp(ws.created_at),
                        "lastModified": stamp(ws.created_at),
                        "location": f"{base_url}/Groups/{ws.id}",
                    },
                }
            )
        return out


# Each record takes the next seq as it is inserted, inside a write transaction (``write_transaction``: SQLite's
# single writer, PostgreSQL's advisory write lock), so two inserts never read the same maximum, in this process or
# another (and the unique index would refuse them if they did).
_NEXT_SEQ = sa.select(sa.func.coalesce(sa.func.max(scim_users.c.seq), 0) + 1).scalar_subquery()


# What ``fixed_parts`` renders a record from, in its order.
_RENDER_FROM = (
    scim_users.c.user_id,
    scim_users.c.user_name,
    scim_users.c.external_id,
    scim_users.c.resource,
    scim_users.c.created_at,
    scim_users.c.updated_at,
)


async def insert_records(conn: Any, records: list[dict[str, Any]], or_ignore: bool = False) -> None:
    """Insert SCIM records (``scim_users`` rows without ``seq`` and ``rendered``), each numbered with the next
    seq and rendered (``render.fixed_parts``)."""
    rows = [{**r, "rendered": fixed_parts(*(r[c.name] for c in _RENDER_FROM))} for r in records]
    insert = insert_ignoring(conn.dialect.name, scim_users) if or_ignore else sa.insert(scim_users)
    await conn.execute(insert.values(seq=_NEXT_SEQ), rows)


async def reindex(conn: Any, user_id: str, resource: dict[str, Any] | None) -> None:
    """Replace a user's rows in the value index (none when ``resource`` is None: deleted)."""
    seq = (await conn.execute(sa.select(scim_users.c.seq).where(scim_users.c.user_id == user_id))).scalar_one()
    await conn.execute(sa.delete(scim_values).where(scim_values.c.user_seq == seq))
    rows = index_rows(user_schema(), user_id, seq, resource) if resource is not None else []
    if rows:
        await conn.execute(sa.insert(scim_values), rows)


async def _documents(conn: Any, rows: list[Any], base_url: str) -> list[str]:
    """The JSON texts of the users of ``_PAGE`` rows; records without ``rendered`` are rendered here."""
    rendered = {r.user_id: r.rendered for r in rows}
    unrendered = [uid for uid, text in rendered.items() if text is None]
    if unrendered:
        found = await conn.execute(sa.select(*_RENDER_FROM).where(scim_users.c.user_id.in_(unrendered)))
        rendered.update({r.user_id: fixed_parts(*r) for r in found})
    return [
        document(rendered[r.user_id], r.user_id, r.version, r.deactivated, groups_json(r.groups, base_url), base_url)
        for r in rows
    ]
