"""Device credentials: issued (the token is answered once and stored only hashed), rotated, looked up, listed
and revoked.

A credential may be narrower than its holder (``DeviceScope``): one workspace, one space, reads only, named
ops, a deadline, an agent's voice, an OAuth client. Checking a credential on use is ``authentication``'s;
rotation applies the same checks of holder and session policy, since a renewed token is a new use.
"""

from __future__ import annotations

import unicodedata
from dataclasses import replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core.clock import Clock
from hangar.core.ids import new_id, new_token, token_hash
from hangar.errors import Conflict, InvalidArgs, NotFound, Unauthenticated
from hangar.identity import tables as t
from hangar.identity.last_use import LastUses
from hangar.identity.models import Device, DeviceScope
from hangar.identity.server_settings import ServerSettings
from hangar.identity.users import Users

WHOLE_HOLDER = DeviceScope()  # a credential that reaches whatever its holder may do

# The longest device name a person may give (at pairing, in a rename, ``hangar admin owner-token --name``): a
# name is read in a list of devices, not a description. Names the server gives itself stay within the column.
MAX_DEVICE_NAME = 100


def device_name(raw: str, *, field: str = "name") -> str:
    """A device name a person typed, trimmed: 1 to ``MAX_DEVICE_NAME`` characters, no control characters (a line
    break or an escape sequence would break every list and log line that shows it)."""
    name = raw.strip()
    if not name:
        raise InvalidArgs("a device name cannot be empty", field=field)
    if len(name) > MAX_DEVICE_NAME:
        raise InvalidArgs(
            f"a device name is at most {MAX_DEVICE_NAME} characters; this one has {len(name)}", field=field
        )
    if any(unicodedata.category(c) == "Cc" for c in name):
        raise InvalidArgs("a device name cannot hold control characters (line breaks, tabs)", field=field)
    return name


def device_from_row(row: Any) -> Device:
    scope = DeviceScope(
        workspace_id=row.workspace_id,
        read_only=bool(row.read_only),
        tools=frozenset(row.tools) if row.tools is not None else None,
        expires_at=row.expires_at,
        agent_id=row.agent_id,
        client_id=row.client_id,
        space_id=row.space_id,
    )
    return Device(row.id, row.user_id, row.name, row.created_at, row.last_used_at, row.revoked_at, scope)


def device_insert(
    device_id: str,
    owner_id: str,
    name: str,
    token: str,
    now: datetime,
    scope: DeviceScope = WHOLE_HOLDER,
    minted_for: str | None = None,
) -> sa.Insert:
    """The insert of a new credential's row; only the token's hash is stored (also made by
    ``hangar.identity.provisioning``, with a new person's other rows)."""
    return sa.insert(t.devices).values(
        id=device_id,
        user_id=owner_id,
        name=name[:200] or "device",
        token_hash=token_hash(token),
        created_at=now,
        last_used_at=now,
        workspace_id=scope.workspace_id,
        read_only=scope.read_only,
        tools=sorted(scope.tools) if scope.tools is not None else None,
        expires_at=scope.expires_at,
        agent_id=scope.agent_id,
        client_id=scope.client_id,
        space_id=scope.space_id,
        minted_for=minted_for,
    )


class Devices:
    def __init__(
        self, engine: AsyncEngine, clock: Clock, users: Users, settings: ServerSettings, uses: LastUses
    ) -> None:
        self._db = engine
        self._clock = clock
        self._users = users  # rotation renews only an active holder's credential
        self._settings = settings  # ... within the session policy
        self._uses = uses  # ... counting the uses not written back yet

    async def issue_device(self, user_id: str, name: str, *, scope: DeviceScope = WHOLE_HOLDER) -> str:
        """Create a device credential for ``user_id``; the token is returned once and stored only hashed."""
        return (await self.new_device(user_id, name, scope=scope))[1]

    async def new_device(
        self, owner_id: str, name: str, *, scope: DeviceScope = WHOLE_HOLDER, minted_for: str | None = None
    ) -> tuple[str, str]:
        """Create a device credential and answer ``(device id, token)``. ``owner_id`` is the person it belongs
        to; for an agent's credential (``scope.agent_id``) the person on whose behalf the agent runs (it stops
        working when they are deactivated), and it is always limited to the agent's workspace. ``minted_for``
        binds a worker's agent credential to what it was minted for (``extend_device``): one credential each,
        a second is refused (``Conflict``)."""
        if scope.agent_id is not None and scope.workspace_id is None:
            raise InvalidArgs("an agent's credential is limited to the agent's workspace: give its workspace_id")
        if scope.space_id is not None and scope.workspace_id is None:
            raise InvalidArgs("a credential limited to a space is limited to its workspace: give its workspace_id")
        device_id, token = new_id(), new_token()
        now = self._clock.now()
        try:
            await self._insert(device_id, owner_id, name, token, now, scope, minted_for)
        except sa.exc.IntegrityError:
            if minted_for is None:
                raise
            raise Conflict("a credential was already minted for this agent run's try") from None
        return device_id, token

    async def _insert(
        self,
        device_id: str,
        owner_id: str,
        name: str,
        token: str,
        now: datetime,
        scope: DeviceScope,
        minted_for: str | None,
    ) -> None:
        async with self._db.begin() as conn:
            await conn.execute(device_insert(device_id, owner_id, name, token, now, scope, minted_for))

    async def rotate_device_token(self, device_id: str, *, expires_at: datetime | None = None) -> str:
        """Give an active device credential a new token; the old one stops working at once (refresh rotation).
        ``expires_at``, when given, is the new token's deadline (an OAuth access token's next hour); otherwise
        the deadline stays. A credential its holder may no longer use (deactivated, or past the session
        policy's maximum age or idle timeout) is not renewed: ``Unauthenticated`` with the reason."""
        device = await self.get_device(device_id)
        if device is None or device.revoked_at is not None:
            raise NotFound(f"device {device_id} is not an active device credential")
        user = await self._users.get_user(device.user_id)
        if user is None or not user.active:
            raise Unauthenticated("the user is deactivated")
        device = self._uses.latest(device)
        # The credential's own deadline is what rotation moves; the session policy still holds.
        undated = replace(device, scope=replace(device.scope, expires_at=None))
        why = (await self._settings.session_policy()).violation(undated, self._clock.now())
        if why is not None:
            raise Unauthenticated(why)
        token = new_token()
        values: dict[str, Any] = {"token_hash": token_hash(token)}
        if expires_at is not None:
            values["expires_at"] = expires_at
        async with self._db.begin() as conn:
            done = await conn.execute(
                sa.update(t.devices)
                .where(t.devices.c.id == device_id, t.devices.c.revoked_at.is_(None))
                .values(**values)
            )
        if done.rowcount == 0:
            raise NotFound(f"device {device_id} is not an active device credential")
        return token

    async def device_of_token(self, token: str) -> Device | None:
        """The device record a token names, with no check of whether it may still be used (a revocation
        request may present an access token that has already expired)."""
        async with self._db.connect() as conn:
            row = (await conn.execute(sa.select(t.devices).where(t.devices.c.token_hash == token_hash(token)))).first()
        return device_from_row(row) if row is not None else None

    async def revoke_device_id(self, device_id: str) -> None:
        """Revoke a credential by id, whoever holds it (an agent's run ended, an OAuth grant was withdrawn)."""
        async with self._db.begin() as conn:
            await conn.execute(
                sa.update(t.devices)
                .where(t.devices.c.id == device_id, t.devices.c.revoked_at.is_(None))
                .values(revoked_at=self._clock.now())
            )

    async def narrow_agent_devices(self, workspace_id: str, agent_id: str, allowed: frozenset[str]) -> int:
        """Take from every live credential of an agent of ``workspace_id`` the ops no longer in ``allowed`` (its
        product tools were narrowed: a run still going, in a server or on a worker, is refused them at its next
        call). Answers how many credentials changed."""
        d = t.devices.c
        live = sa.select(d.id, d.tools).where(
            d.agent_id == agent_id, d.workspace_id == workspace_id, d.revoked_at.is_(None), d.tools.is_not(None)
        )
        changed = 0
        async with self._db.begin() as conn:
            for device_id, tools in (await conn.execute(live)).all():
                kept = sorted(set(tools) & allowed)
                if len(kept) != len(tools):
                    await conn.execute(sa.update(t.devices).where(d.id == device_id).values(tools=kept))
                    changed += 1
        return changed

    async def extend_device(
        self, device_id: str, minted_for: str, expires_at: datetime, allowed: frozenset[str]
    ) -> bool:
        """Move the deadline of a worker's agent credential to ``expires_at`` and narrow its tools to ``allowed``
        (a claim renewed: ``hangar.agents.worker_grants``); answers whether it was renewed. Only a credential
        minted for ``minted_for``, neither revoked nor past its deadline, is: a lapsed one stays dead, and one
        minted for another run or try is never revived for this one."""
        d = t.devices.c
        renewable = sa.and_(
            d.id == device_id, d.minted_for == minted_for, d.revoked_at.is_(None), d.expires_at > self._clock.now()
        )
        async with self._db.begin() as conn:
            tools = (await conn.execute(sa.select(d.tools).where(renewable))).scalar()
            if tools is None:
                return False
            kept = sorted(set(tools) & allowed)
            moved = await conn.execute(sa.update(t.devices).where(renewable).values(expires_at=expires_at, tools=kept))
        return moved.rowcount == 1

    async def revoke_minted(self, device_id: str, minted_by: str) -> bool:
        """Revoke a worker's agent credential if it was minted for ``minted_by`` (the head of its ``minted_for``:
        the worker credential that asked); answers whether one was. Another worker's is never touched."""
        d = t.devices.c
        async with self._db.begin() as conn:
            done = await conn.execute(
                sa.update(t.devices)
                .where(d.id == device_id, d.minted_for.startswith(minted_by, autoescape=True), d.revoked_at.is_(None))
                .values(revoked_at=self._clock.now())
            )
        return done.rowcount == 1

    async def get_device(self, device_id: str) -> Device | None:
        async with self._db.connect() as conn:
            row = (await conn.execute(sa.select(t.devices).where(t.devices.c.id == device_id))).first()
        return device_from_row(row) if row is not None else None

    async def list_devices(self, user_id: str) -> list[Device]:
        mine = sa.and_(t.devices.c.user_id == user_id, t.devices.c.agent_id.is_(None))  # not agents' they sponsor
        q = sa.select(t.devices).where(mine).order_by(t.devices.c.created_at)
        async with self._db.connect() as conn:
            rows = (await conn.execute(q)).all()
        return [device_from_row(r) for r in rows]

    async def rename_device(self, user_id: str, device_id: str, name: str) -> tuple[str, Device]:
        """Rename one of ``user_id``'s own active devices (not an agent's they sponsor) to ``name`` (already checked
        with ``device_name``); answers the old name and the device as it is now."""
        mine = sa.and_(
            t.devices.c.id == device_id,
            t.devices.c.user_id == user_id,
            t.devices.c.agent_id.is_(None),
            t.devices.c.revoked_at.is_(None),
        )
        async with self._db.begin() as conn:
            row = (await conn.execute(sa.select(t.devices).where(mine))).first()
            if row is None:
                raise NotFound(f"deviceId: {device_id} is not an active device of yours")
            await conn.execute(sa.update(t.devices).where(mine).values(name=name))
        return row.name, replace(self._uses.latest(device_from_row(row)), name=name)

    async def revoke_device(self, user_id: str, device_id: str) -> None:
        async with self._db.begin() as conn:
            done = await conn.execute(
                sa.update(t.devices)
                .where(t.devices.c.id == device_id, t.devices.c.user_id == user_id, t.devices.c.revoked_at.is_(None))
                .values(revoked_at=self._clock.now())
            )
        if done.rowcount == 0:
            raise NotFound(f"device {device_id} is not an active device of this user")
