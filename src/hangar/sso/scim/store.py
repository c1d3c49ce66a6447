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
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql.elements import ColumnElement

from hangar.core.clock import Clock
from hangar.identity import tables as identity_tables
from hangar.identity.service import SETTING_OWNER, IdentityService
from hangar.sso.scim.errors import ScimBadRequest, ScimNotFound, ScimUniqueness
from hangar.sso.scim.index import index_rows
from hangar.sso.scim.match import Bound, FilterSemanticError, fold, get_ci
from hangar.sso.scim.patch import apply_patch
from hangar.sso.scim.resource import canonical, require_user_name
from hangar.sso.scim.schema import ENTERPRISE_URN, GROUP_URN, USER_URN, user_schema
from hangar.sso.scim.sql import columns_only, to_sql
from hangar.sso.scim.tables import scim_users, scim_values

users = identity_tables.users
memberships = identity_tables.memberships
workspaces = identity_tables.workspaces


def stamp(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


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
_UNINDEXED_ORDER: tuple[ColumnElement[Any], ...] = (
    sa.literal_column("+scim_users.created_at"),
    sa.literal_column("+scim_users.user_id"),
)


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

    def _base(self, owner: str | None) -> sa.Select[Any]:
        q = (
            sa.select(scim_users, users.c.deactivated_at)
            .join(users, users.c.id == scim_users.c.user_id)
            .where(scim_users.c.deleted_at.is_(None))
        )
        return q.where(users.c.id != owner) if owner else q

    async def sync(self) -> None:
        """Give every user without a SCIM record one. Users are never deleted, so an unchanged count of users
        means nothing to do: one ``count(*)`` per request in the common case."""
        async with self._db.connect() as conn:
            known = (await conn.execute(sa.select(sa.func.count()).select_from(users))).scalar_one()
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
            async with self._db.begin() as conn:
                await conn.execute(sa.insert(scim_users).prefix_with("OR IGNORE"), rows)
                for row in rows:
                    await reindex(conn, row["user_id"], row["resource"])
        self._known_users = known

    async def get(self, user_id: str, base_url: str) -> dict[str, Any]:
        await self.sync()
        owner = await self._owner()
        async with self._db.connect() as conn:
            row = (await conn.execute(self._base(owner).where(scim_users.c.user_id == user_id))).first()
            if row is None:
                raise ScimNotFound(f"no user {user_id}")
            groups = await _groups_of(conn, [user_id], base_url)
        return render_user(row, base_url, groups.get(user_id))

    async def search(
        self, bound: Bound | None, start_index: int, count: int, base_url: str
    ) -> tuple[int, list[dict[str, Any]]]:
        """``(totalResults, page)`` for a filter, with 1-based ``start_index``.

        No filter, or one on columns only: a count that the live index answers without reading
        representations, then the page in listing order, stopping after ``count`` rows. A filter that looks
        into the value index or other tables runs once instead: the matching ids in listing order (their
        number is the total), then the page's representations by id. Neither path copies every matching
        representation, as a window count would."""
        await self.sync()
        owner = await self._owner()
        conditions: list[ColumnElement[bool]] = [scim_users.c.deleted_at.is_(None)]
        if owner:
            conditions.append(scim_users.c.user_id != owner)
        if bound is not None:
            try:
                conditions.append(to_sql(bound))
            except FilterSemanticError as exc:
                raise ScimBadRequest("invalidFilter", f"filter: {exc}") from None
        order = (scim_users.c.created_at, scim_users.c.user_id)
        page_base = sa.select(scim_users, users.c.deactivated_at).join(users, users.c.id == scim_users.c.user_id)
        async with self._db.connect() as conn:
            rows: list[Any] = []
            if bound is None or columns_only(bound):
                total_q = sa.select(sa.func.count()).select_from(scim_users).where(*conditions)
                total = int((await conn.execute(total_q)).scalar_one())
                if count > 0 and total >= start_index:
                    # Many matches: walk the listing order and stop early. Few: find them by the filter's own
                    # index and sort them (the unary plus keeps SQLite, which has no statistics here, from
                    # walking the listing order over every user instead).
                    by = order if total > SORT_IN_MEMORY_BELOW else _UNINDEXED_ORDER
                    page_q = page_base.where(*conditions).order_by(*by).limit(count).offset(start_index - 1)
                    rows = list((await conn.execute(page_q)).all())
            else:
                ids_q = sa.select(scim_users.c.user_id).where(*conditions).order_by(*order)
                ids = list((await conn.execute(ids_q)).scalars())
                total = len(ids)
                wanted = ids[start_index - 1 : start_index - 1 + count] if count > 0 else []
                if wanted:
                    found = (await conn.execute(page_base.where(scim_users.c.user_id.in_(wanted)))).all()
                    by_id = {r.user_id: r for r in found}
                    rows = [by_id[i] for i in wanted if i in by_id]
            shown = [r.user_id for r in rows]
            groups = await _groups_of(conn, shown, base_url) if shown else {}
        return total, [render_user(r, base_url, groups.get(r.user_id)) for r in rows]

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
            async with self._db.begin() as conn:
                await conn.execute(
                    sa.insert(scim_users).values(
                        user_id=user.id,
                        user_name=name,
                        user_name_lc=fold(name),
                        external_id=resource.get("externalId"),
                        resource=resource,
                        created_at=now,
                        updated_at=now,
                        version=1,
                    )
                )
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
        async with self._db.begin() as conn:
            await self._check_unique(conn, name, user_id)
            await conn.execute(
                sa.update(scim_users)
                .where(scim_users.c.user_id == user_id)
                .values(
                    user_name=name,
                    user_name_lc=fold(name),
                    external_id=resource.get("externalId"),
                    resource=resource,
                    updated_at=self._clock.now(),
                    version=scim_users.c.version + 1,
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


async def reindex(conn: Any, user_id: str, resource: dict[str, Any] | None) -> None:
    """Replace a user's rows in the value index (none when ``resource`` is None: deleted)."""
    await conn.execute(sa.delete(scim_values).where(scim_values.c.user_id == user_id))
    rows = index_rows(user_schema(), user_id, resource) if resource is not None else []
    if rows:
        await conn.execute(sa.insert(scim_values), rows)


async def _groups_of(conn: Any, user_ids: list[str], base_url: str) -> dict[str, list[dict[str, Any]]]:
    """The read-only ``groups`` of some users: the workspaces they are members of."""
    q = (
        sa.select(memberships.c.user_id, workspaces.c.id, workspaces.c.name)
        .join(workspaces, workspaces.c.id == memberships.c.workspace_id)
        .where(memberships.c.user_id.in_(user_ids))
        .order_by(memberships.c.created_at, workspaces.c.id)
    )
    found: dict[str, list[dict[str, Any]]] = {}
    for user_id, workspace_id, name in (await conn.execute(q)).all():
        found.setdefault(user_id, []).append(
            {"value": workspace_id, "display": name, "type": "direct", "$ref": f"{base_url}/Groups/{workspace_id}"}
        )
    return found


def render_user(row: Any, base_url: str, groups: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    stored: dict[str, Any] = dict(row.resource)
    schemas = [USER_URN]
    if get_ci(stored, ENTERPRISE_URN) is not None:
        schemas.append(ENTERPRISE_URN)
    out: dict[str, Any] = {"schemas": schemas, "id": row.user_id}
    if row.external_id:
        out["externalId"] = row.external_id
    out.update({k: v for k, v in stored.items() if k not in ("externalId", "active")})
    out["userName"] = row.user_name
    # ``active`` is shown once the provider has set it (users.deactivated_at holds the truth); a provider that
    # removes it makes the user active again, the attribute's meaning when absent.
    if "active" in stored or row.deactivated_at is not None:
        out["active"] = row.deactivated_at is None
    if groups:
        out["groups"] = groups
    out["meta"] = {
        "resourceType": "User",
        "created": stamp(row.created_at),
        "lastModified": stamp(row.updated_at),
        "location": f"{base_url}/Users/{row.user_id}",
        "version": f'W/"{row.version}"',
    }
    return out
