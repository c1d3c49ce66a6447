"""Users, workspaces, memberships, device credentials, server settings and authentication.

Authentication runs on every use of a credential (every RPC frame, every authenticated HTTP request), so what it
reads (credentials, roles, the server owner, the session policy, the pairing flag) is kept in memory, but only
for as long as the server database's ``authority`` change counter stays put: triggers bump it in the same
transaction as any change to users, workspaces, memberships, credentials or server settings, made by this
process or any other (``hangar admin owner-token`` while the server runs, a second server). Every decision reads
the counter first (a few microseconds), so none acts on a copy another process has made stale.

``last_used_at`` is written back at most every ``_TOUCH_SECONDS`` (the idle timeout is counted in minutes).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.requests import HTTPConnection

from hangar.core import outbox
from hangar.core.clock import Clock
from hangar.core.context import AppContext
from hangar.core.db import write_transaction
from hangar.core.events import DomainEvent
from hangar.core.http import bearer_token
from hangar.core.ids import new_id, new_token, token_hash
from hangar.core.principal import Principal, Role
from hangar.core.settings import SettingSpec
from hangar.core.stamps import Stamp, StampedCache, engine_stamp
from hangar.errors import Conflict, InvalidArgs, NotFound, Unauthenticated, Unavailable
from hangar.identity import tables as t
from hangar.identity.models import Device, DeviceScope, Member, SessionPolicy, User, Workspace

_TOUCH_SECONDS = 30.0
AUTHORITY = "authority"

SETTING_OWNER = "serverOwnerUserId"
SETTING_PAIRING = "pairingEnabled"
SETTING_POLICY = "sessionPolicy"
OWN_SETTINGS = frozenset({SETTING_OWNER, SETTING_PAIRING, SETTING_POLICY})


@dataclass(frozen=True)
class ServerAuthority:
    """The server-wide settings every decision reads, as of one value of the authority counter."""

    owner_id: str | None
    pairing_enabled: bool
    policy: SessionPolicy


@dataclass
class _Use:
    """This process's own record of a credential's last use, written back every ``_TOUCH_SECONDS``."""

    last_used_at: datetime
    touched_at: float


WHOLE_HOLDER = DeviceScope()  # a credential that reaches whatever its holder may do


def _user(row: Any) -> User:
    return User(
        id=row.id,
        email=row.email,
        display_name=row.display_name,
        created_at=row.created_at,
        deactivated_at=row.deactivated_at,
        sso_issuer=row.sso_issuer,
        sso_subject=row.sso_subject,
    )


def _device(row: Any) -> Device:
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


def _principal(device: Device, user: User, owner_id: str | None, version: int) -> Principal:
    scope = device.scope
    if scope.agent_id is not None:  # an agent's credential speaks for the agent, never for its sponsor
        who = Principal(f"agent:{scope.agent_id}", device.id, device.name, False, agent_id=scope.agent_id)
    else:
        # A credential limited to one workspace, or to reads, does not carry the server owner's server-wide powers
        # (some owner reads act on the network: sso.testConnection).
        owner = owner_id is not None and owner_id == user.id and scope.workspace_id is None and not scope.read_only
        who = Principal(user.id, device.id, user.display_name, owner)
    delegated = scope.client_id is not None or scope.agent_id is not None or scope.expires_at is not None
    return replace(
        who,
        authority=version,
        workspace_id=scope.workspace_id,
        read_only=scope.read_only,
        tools=scope.tools,
        space_id=scope.space_id,
        delegated=delegated,
    )


class IdentityService:
    def __init__(
        self,
        engine: AsyncEngine,
        clock: Clock,
        stamp: Stamp | None = None,
        relay: Callable[[], Awaitable[object]] | None = None,
        settings: Iterable[SettingSpec] = (),
    ) -> None:
        self._db = engine
        # The server settings other parts declared (``Part.server_settings``); this service's own keys aside,
        # nothing else is written.
        self._settings: dict[str, SettingSpec] = {}
        for spec in settings:
            if spec.key in self._settings or spec.key in OWN_SETTINGS:
                raise ValueError(f"server setting {spec.key!r} is declared twice")
            self._settings[spec.key] = spec
        self._clock = clock
        self._relay = relay  # carries events staged with records to their workspaces (``hangar.core.outbox``)
        # Keys: ("device", token hash) -> (Device, User) | None; ("role", workspace, user) -> Role | None;
        # ("server",) -> ServerAuthority.
        self._authority: StampedCache[tuple[str, ...], Any] = StampedCache(stamp or engine_stamp(engine, AUTHORITY))
        self._uses: dict[str, _Use] = {}

    async def authority_stamp(self) -> int:
        """The authority counter now: changes whenever anything an authorization decision reads changes."""
        return await self._authority.current()

    async def server_authority(self, *, as_of: int | None = None) -> ServerAuthority:
        value = await self._authority.get(("server",), self._load_server_authority, as_of=as_of)
        return value  # type: ignore[no-any-return]

    async def _load_server_authority(self) -> ServerAuthority:
        policy = await self.get_setting(SETTING_POLICY)
        pairing = await self.get_setting(SETTING_PAIRING)
        owner = await self.get_setting(SETTING_OWNER)
        return ServerAuthority(
            owner_id=owner if isinstance(owner, str) else None,
            pairing_enabled=True if pairing is None else bool(pairing),
            policy=SessionPolicy(int(policy.get("maxAgeMinutes", 0)), int(policy.get("idleTimeoutMinutes", 0)))
            if isinstance(policy, dict)
            else SessionPolicy(),
        )

    # -- server settings ---------------------------------------------------------------------------------

    async def get_setting(self, key: str) -> Any:
        async with self._db.connect() as conn:
            row = (
                await conn.execute(sa.select(t.server_settings.c.value).where(t.server_settings.c.key == key))
            ).first()
        return None if row is None else row[0]

    async def set_setting(self, key: str, value: Any) -> None:
        """Store a server setting: one of this service's own, or one a part declared (validated first)."""
        if key not in OWN_SETTINGS:
            spec = self._settings.get(key)
            if spec is None:
                raise ValueError(
                    f"server setting {key!r} is not declared by any part: list it in Part(server_settings)"
                )
            value = spec.validate(value)
        async with self._db.begin() as conn:
            done = await conn.execute(
                sa.update(t.server_settings).where(t.server_settings.c.key == key).values(value=value)
            )
            if done.rowcount == 0:
                await conn.execute(sa.insert(t.server_settings).values(key=key, value=value))

    async def pairing_enabled(self) -> bool:
        return (await self.server_authority()).pairing_enabled

    async def set_pairing_enabled(self, enabled: bool) -> None:
        await self.set_setting(SETTING_PAIRING, enabled)

    async def session_policy(self) -> SessionPolicy:
        return (await self.server_authority()).policy

    async def set_session_policy(self, max_age_minutes: int, idle_timeout_minutes: int) -> SessionPolicy:
        for name, value in (("maxAgeMinutes", max_age_minutes), ("idleTimeoutMinutes", idle_timeout_minutes)):
            if value < 0:
                raise InvalidArgs(f"{name} must be 0 (unset) or a positive number of minutes", field=name)
        policy = SessionPolicy(max_age_minutes, idle_timeout_minutes)
        await self.set_setting(
            SETTING_POLICY, {"maxAgeMinutes": max_age_minutes, "idleTimeoutMinutes": idle_timeout_minutes}
        )
        return policy

    # -- users ---------------------------------------------------------------------------------------------

    async def get_user(self, user_id: str) -> User | None:
        async with self._db.connect() as conn:
            row = (await conn.execute(sa.select(t.users).where(t.users.c.id == user_id))).first()
        return None if row is None else _user(row)

    async def find_user_by_email(self, email: str) -> User | None:
        q = sa.select(t.users).where(sa.func.lower(t.users.c.email) == email.lower()).order_by(t.users.c.created_at)
        async with self._db.connect() as conn:
            row = (await conn.execute(q)).first()
        return None if row is None else _user(row)

    async def find_user_by_sso(self, issuer: str, subject: str) -> User | None:
        q = sa.select(t.users).where(t.users.c.sso_issuer == issuer, t.users.c.sso_subject == subject)
        async with self._db.connect() as conn:
            row = (await conn.execute(q)).first()
        return None if row is None else _user(row)

    async def list_users(self) -> list[User]:
        async with self._db.connect() as conn:
            rows = (await conn.execute(sa.select(t.users).order_by(t.users.c.created_at))).all()
        return [_user(r) for r in rows]

    async def create_user(
        self,
        *,
        email: str | None,
        display_name: str,
        sso_issuer: str | None = None,
        sso_subject: str | None = None,
    ) -> User:
        user = User(new_id(), email, display_name, self._clock.now(), None, sso_issuer, sso_subject)
        try:
            async with self._db.begin() as conn:
                await conn.execute(
                    sa.insert(t.users).values(
                        id=user.id,
                        email=email,
                        display_name=display_name,
                        created_at=user.created_at,
                        sso_issuer=sso_issuer,
                        sso_subject=sso_subject,
                    )
                )
        except sa.exc.IntegrityError as exc:
            raise Conflict("a user with that identity-provider subject already exists") from exc
        return user

    async def update_user(self, user_id: str, **fields: Any) -> User:
        allowed = {"email", "display_name", "deactivated_at", "sso_issuer", "sso_subject"}
        unknown = set(fields) - allowed
        if unknown:
            raise InvalidArgs(f"unknown user fields: {', '.join(sorted(unknown))}", field=sorted(unknown)[0])
        try:
            async with self._db.begin() as conn:
                done = await conn.execute(sa.update(t.users).where(t.users.c.id == user_id).values(**fields))
        except sa.exc.IntegrityError as exc:
            raise Conflict("a user with that identity-provider subject already exists") from exc
        if done.rowcount == 0:
            raise NotFound(f"user {user_id} does not exist")
        user = await self.get_user(user_id)
        assert user is not None
        return user

    async def deactivate_user(self, user_id: str) -> User:
        """Deactivate and revoke every credential; the user can no longer sign in."""
        now = self._clock.now()
        async with self._db.begin() as conn:
            done = await conn.execute(sa.update(t.users).where(t.users.c.id == user_id).values(deactivated_at=now))
            if done.rowcount == 0:
                raise NotFound(f"user {user_id} does not exist")
            await conn.execute(
                sa.update(t.devices)
                .where(t.devices.c.user_id == user_id, t.devices.c.revoked_at.is_(None))
                .values(revoked_at=now)
            )
        user = await self.get_user(user_id)
        assert user is not None
        return user

    async def reactivate_user(self, user_id: str) -> User:
        return await self.update_user(user_id, deactivated_at=None)

    # -- server owner --------------------------------------------------------------------------------------

    async def is_server_owner(self, user_id: str) -> bool:
        owner = (await self.server_authority()).owner_id
        return owner is not None and owner == user_id

    async def ensure_server_owner(self) -> User:
        """The install's operator, created on first use (one transaction, so two processes asking at once
        agree on one owner)."""
        async with write_transaction(self._db) as conn:
            row = (
                await conn.execute(sa.select(t.server_settings.c.value).where(t.server_settings.c.key == SETTING_OWNER))
            ).first()
            if row is not None and isinstance(row[0], str):
                found = (await conn.execute(sa.select(t.users).where(t.users.c.id == row[0]))).first()
                if found is not None:
                    return _user(found)
            user = User(new_id(), None, "Server owner", self._clock.now(), None, None, None)
            await conn.execute(
                sa.insert(t.users).values(
                    id=user.id, email=None, display_name=user.display_name, created_at=user.created_at
                )
            )
            if row is None:
                await conn.execute(sa.insert(t.server_settings).values(key=SETTING_OWNER, value=user.id))
            else:
                await conn.execute(
                    sa.update(t.server_settings).where(t.server_settings.c.key == SETTING_OWNER).values(value=user.id)
                )
        return user

    # -- workspaces and members ---------------------------------------------------------------------------

    async def create_workspace(self, name: str, owner_id: str, *, workspace_id: str | None = None) -> Workspace:
        """The workspace's row and its owner's membership (its database is made first, complete: see
        ``Databases.create_workspace``)."""
        ws = Workspace(workspace_id or new_id(), name, self._clock.now(), owner_id)
        async with self._db.begin() as conn:
            await conn.execute(
                sa.insert(t.workspaces).values(id=ws.id, name=name, created_at=ws.created_at, created_by=owner_id)
            )
            await conn.execute(
                sa.insert(t.memberships).values(
                    workspace_id=ws.id, user_id=owner_id, role=Role.owner.name, created_at=ws.created_at
                )
            )
        return ws

    async def get_workspace(self, workspace_id: str) -> Workspace | None:
        async with self._db.connect() as conn:
            row = (await conn.execute(sa.select(t.workspaces).where(t.workspaces.c.id == workspace_id))).first()
        return None if row is None else Workspace(row.id, row.name, row.created_at, row.created_by)

    async def list_workspace_ids(self) -> list[str]:
        async with self._db.connect() as conn:
            rows = (await conn.execute(sa.select(t.workspaces.c.id).order_by(t.workspaces.c.created_at))).all()
        return [r[0] for r in rows]

    async def workspaces_of(self, user_id: str) -> list[tuple[Workspace, Role]]:
        q = (
            sa.select(t.workspaces, t.memberships.c.role)
            .join(t.memberships, t.memberships.c.workspace_id == t.workspaces.c.id)
            .where(t.memberships.c.user_id == user_id)
            .order_by(t.workspaces.c.created_at)
        )
        async with self._db.connect() as conn:
            rows = (await conn.execute(q)).all()
        return [(Workspace(r.id, r.name, r.created_at, r.created_by), Role[r.role]) for r in rows]

    async def role_of(self, workspace_id: str, user_id: str, *, as_of: int | None = None) -> Role | None:
        """``as_of``: the authority counter the caller's decision read (``Principal.authority``)."""

        async def load() -> Role | None:
            q = sa.select(t.memberships.c.role).where(
                t.memberships.c.workspace_id == workspace_id, t.memberships.c.user_id == user_id
            )
            async with self._db.connect() as conn:
                row = (await conn.execute(q)).first()
            return None if row is None else Role[row[0]]

        role: Role | None = await self._authority.get(("role", workspace_id, user_id), load, as_of=as_of)
        return role

    async def members(self, workspace_id: str) -> list[Member]:
        q = (
            sa.select(t.memberships, t.users.c.display_name, t.users.c.email)
            .join(t.users, t.users.c.id == t.memberships.c.user_id)
            .where(t.memberships.c.workspace_id == workspace_id)
            .order_by(t.memberships.c.created_at)
        )
        async with self._db.connect() as conn:
            rows = (await conn.execute(q)).all()
        return [Member(r.user_id, r.display_name, r.email, Role[r.role], r.created_at) for r in rows]

    async def _announce(self, conn: Any, event: DomainEvent | None) -> None:
        """Stage ``event`` in the caller's transaction (it commits with the record it announces)."""
        if event is not None:
            await outbox.stage(conn, event, self._clock.now())

    async def _relayed(self, event: DomainEvent | None) -> None:
        if event is not None and self._relay is not None:
            await self._relay()

    async def add_member(
        self, workspace_id: str, user_id: str, role: Role, *, announce: DomainEvent | None = None
    ) -> None:
        """Add a member (a no-op when already one); ``announce`` is written with the membership."""
        now = self._clock.now()
        async with self._db.begin() as conn:
            exists = (
                await conn.execute(
                    sa.select(t.memberships.c.role).where(
                        t.memberships.c.workspace_id == workspace_id, t.memberships.c.user_id == user_id
                    )
                )
            ).first()
            if exists is not None:
                return
            await conn.execute(
                sa.insert(t.memberships).values(
                    workspace_id=workspace_id, user_id=user_id, role=role.name, created_at=now
                )
            )
            await self._announce(conn, announce)
        await self._relayed(announce)

    async def set_role(
        self, workspace_id: str, user_id: str, role: Role, *, announce: DomainEvent | None = None
    ) -> None:
        # Check and change under the write lock: two owners demoting themselves at once cannot both pass.
        async with write_transaction(self._db) as conn:
            await self._guard_last_owner(conn, workspace_id, user_id, role)
            done = await conn.execute(
                sa.update(t.memberships)
                .where(t.memberships.c.workspace_id == workspace_id, t.memberships.c.user_id == user_id)
                .values(role=role.name)
            )
            if done.rowcount == 0:
                raise NotFound(f"user {user_id} is not a member of this workspace")
            await self._announce(conn, announce)
        await self._relayed(announce)

    async def remove_member(self, workspace_id: str, user_id: str, *, announce: DomainEvent | None = None) -> None:
        async with write_transaction(self._db) as conn:
            await self._guard_last_owner(conn, workspace_id, user_id, None)
            done = await conn.execute(
                sa.delete(t.memberships).where(
                    t.memberships.c.workspace_id == workspace_id, t.memberships.c.user_id == user_id
                )
            )
            if done.rowcount == 0:
                raise NotFound(f"user {user_id} is not a member of this workspace")
            await self._announce(conn, announce)
        await self._relayed(announce)

    async def _guard_last_owner(self, conn: Any, workspace_id: str, user_id: str, new_role: Role | None) -> None:
        """A workspace always keeps at least one owner."""
        if new_role is Role.owner:
            return
        q = sa.select(t.memberships.c.user_id).where(
            t.memberships.c.workspace_id == workspace_id, t.memberships.c.role == Role.owner.name
        )
        owners = {r[0] for r in (await conn.execute(q)).all()}
        if owners == {user_id}:
            raise Conflict("the workspace's last owner cannot be demoted or removed")

    # -- devices and authentication -------------------------------------------------------------------------

    async def issue_device(self, user_id: str, name: str, *, scope: DeviceScope = WHOLE_HOLDER) -> str:
        """Create a device credential for ``user_id``; the token is returned once and stored only hashed."""
        return (await self.new_device(user_id, name, scope=scope))[1]

    async def new_device(self, owner_id: str, name: str, *, scope: DeviceScope = WHOLE_HOLDER) -> tuple[str, str]:
        """Create a device credential and answer ``(device id, token)``. ``owner_id`` is the person it belongs
        to; for an agent's credential (``scope.agent_id``) the person on whose behalf the agent runs (it stops
        working when they are deactivated), and it is always limited to the agent's workspace."""
        if scope.agent_id is not None and scope.workspace_id is None:
            raise InvalidArgs("an agent's credential is limited to the agent's workspace: give its workspace_id")
        if scope.space_id is not None and scope.workspace_id is None:
            raise InvalidArgs("a credential limited to a space is limited to its workspace: give its workspace_id")
        device_id, token = new_id(), new_token()
        now = self._clock.now()
        async with self._db.begin() as conn:
            await conn.execute(
                sa.insert(t.devices).values(
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
                )
            )
        return device_id, token

    async def rotate_device_token(self, device_id: str, *, expires_at: datetime | None = None) -> str:
        """Give an active device credential a new token; the old one stops working at once (refresh rotation).
        ``expires_at``, when given, is the new token's deadline (an OAuth access token's next hour); otherwise
        the deadline stays. A credential its holder may no longer use (deactivated, or past the session
        policy's maximum age or idle timeout) is not renewed: ``Unauthenticated`` with the reason."""
        device = await self.get_device(device_id)
        if device is None or device.revoked_at is not None:
            raise NotFound(f"device {device_id} is not an active device credential")
        user = await self.get_user(device.user_id)
        if user is None or not user.active:
            raise Unauthenticated("the user is deactivated")
        use = self._uses.get(device_id)
        if use is not None and use.last_used_at > device.last_used_at:
            device = replace(device, last_used_at=use.last_used_at)
        # The credential's own deadline is what rotation moves; the session policy still holds.
        undated = replace(device, scope=replace(device.scope, expires_at=None))
        why = (await self.session_policy()).violation(undated, self._clock.now())
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
        return _device(row) if row is not None else None

    async def revoke_device_id(self, device_id: str) -> None:
        """Revoke a credential by id, whoever holds it (an agent's run ended, an OAuth grant was withdrawn)."""
        async with self._db.begin() as conn:
            await conn.execute(
                sa.update(t.devices)
                .where(t.devices.c.id == device_id, t.devices.c.revoked_at.is_(None))
                .values(revoked_at=self._clock.now())
            )

    async def get_device(self, device_id: str) -> Device | None:
        async with self._db.connect() as conn:
            row = (await conn.execute(sa.select(t.devices).where(t.devices.c.id == device_id))).first()
        return _device(row) if row is not None else None

    async def list_devices(self, user_id: str) -> list[Device]:
        mine = sa.and_(t.devices.c.user_id == user_id, t.devices.c.agent_id.is_(None))  # not agents' they sponsor
        q = sa.select(t.devices).where(mine).order_by(t.devices.c.created_at)
        async with self._db.connect() as conn:
            rows = (await conn.execute(q)).all()
        return [_device(r) for r in rows]

    async def revoke_device(self, user_id: str, device_id: str) -> None:
        async with self._db.begin() as conn:
            done = await conn.execute(
                sa.update(t.devices)
                .where(t.devices.c.id == device_id, t.devices.c.user_id == user_id, t.devices.c.revoked_at.is_(None))
                .values(revoked_at=self._clock.now())
            )
        if done.rowcount == 0:
            raise NotFound(f"device {device_id} is not an active device of this user")

    async def authenticate(self, token: str, *, touch: bool = True) -> Principal:
        """Check a device credential on use: it exists, is not revoked, its user is active, and the session
        policy (max age, idle timeout) allows it. Raises ``Unauthenticated`` with the reason.

        ``touch=False`` checks without counting as a use (re-checking the credential behind an open watch)."""
        if not token:
            raise Unauthenticated("no device credential was given")
        key = token_hash(token)
        version = await self._authority.current()  # one read of the counter serves the whole check
        found = await self._authority.get(("device", key), lambda: self._load_device(key), as_of=version)
        return await self._usable(found, version, touch=touch)

    async def recheck_device(self, device_id: str) -> Principal:
        """Check again, by its id, a credential that was good when something long-lived opened (an MCP session's
        subscription): the same checks as ``authenticate`` without counting as a use. By id, because the token
        itself may have been rotated meanwhile (an OAuth refresh) while the credential lives on."""
        version = await self._authority.current()
        found = await self._authority.get(
            ("device-id", device_id), lambda: self._load_device_where(t.devices.c.id == device_id), as_of=version
        )
        return await self._usable(found, version, touch=False)

    async def _usable(self, found: tuple[Device, User] | None, version: int, *, touch: bool) -> Principal:
        if found is None:
            raise Unauthenticated("the device credential is not known")
        device, user = found
        if device.revoked_at is not None:
            raise Unauthenticated("the device credential was revoked")
        if not user.active:
            raise Unauthenticated("the user is deactivated")
        authority = await self.server_authority(as_of=version)
        now = self._clock.now()
        use = self._uses.get(device.id)
        if use is not None and use.last_used_at > device.last_used_at:
            device = replace(device, last_used_at=use.last_used_at)
        why = authority.policy.violation(device, now)
        if why is not None:
            raise Unauthenticated(why)
        if touch:
            mono = self._clock.monotonic()
            if use is None:
                use = self._uses[device.id] = _Use(now, mono)
            use.last_used_at = now
            if mono - use.touched_at >= _TOUCH_SECONDS:
                use.touched_at = mono
                await self._touch(device.id, now)
        return _principal(device, user, authority.owner_id, version)

    async def _load_device(self, key: str) -> tuple[Device, User] | None:
        return await self._load_device_where(t.devices.c.token_hash == key)

    async def _load_device_where(self, which: sa.ColumnElement[bool]) -> tuple[Device, User] | None:
        q = sa.select(t.devices).where(which)
        async with self._db.connect() as conn:
            row = (await conn.execute(q)).first()
        if row is None:
            return None
        device = _device(row)
        user = await self.get_user(device.user_id)
        if user is None:
            raise Unauthenticated("the credential's user no longer exists")
        return device, user

    async def _touch(self, device_id: str, now: datetime) -> None:
        async with self._db.begin() as conn:
            await conn.execute(sa.update(t.devices).where(t.devices.c.id == device_id).values(last_used_at=now))

    async def authenticate_bearer(self, request: HTTPConnection) -> Principal:
        """Authenticate an HTTP request by its ``Authorization: Bearer <device credential>`` header."""
        token = bearer_token(request.headers.get("authorization"))
        if token is None:
            raise Unauthenticated("send the device credential as Authorization: Bearer <token>")
        return await self.authenticate(token)

    async def flush(self) -> None:
        """Write back pending last-used times (at shutdown)."""
        pending = [(device_id, use.last_used_at) for device_id, use in self._uses.items()]
        for device_id, at in pending:
            await self._touch(device_id, at)
        await asyncio.sleep(0)


async def usable_workspace_ids(app: AppContext) -> list[str]:
    """Every workspace whose database opens. A damaged one is reported by ``Databases`` (once) and left out, so
    one broken workspace never keeps the rest from starting or serving."""
    usable = []
    for workspace_id in await app.service(IdentityService).list_workspace_ids():
        try:
            await app.dbs.workspace(workspace_id)
        except (NotFound, Unavailable):
            continue
        usable.append(workspace_id)
    return usable
