"""Checking a device credential on use, and who it speaks for.

A credential is good when it exists, is not revoked, its user is active, and the session policy (maximum age,
idle timeout) and its own deadline allow it. This runs on every RPC frame and authenticated HTTP request, so
the credential and its user are read through the authority cache (``hangar.identity.authority``), and the use
is counted in memory (``last_use``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core.clock import Clock
from hangar.core.ids import token_hash
from hangar.core.principal import Principal
from hangar.errors import Unauthenticated
from hangar.httpkit.requests import bearer_token
from hangar.identity import tables as t
from hangar.identity.authority import AuthorityCache
from hangar.identity.devices import device_from_row
from hangar.identity.last_use import LastUses
from hangar.identity.models import Device, User
from hangar.identity.server_settings import ServerSettings
from hangar.identity.users import Users

if TYPE_CHECKING:
    from starlette.requests import HTTPConnection  # the server's; a command authenticates nobody


def principal_of(device: Device, user: User, owner_id: str | None, version: int) -> Principal:
    """Who a good credential speaks for, carrying its limits and the authority counter it was checked under.
    Built in one call (no ``dataclasses.replace``): this runs on every RPC frame."""
    scope = device.scope
    delegated = scope.client_id is not None or scope.agent_id is not None or scope.expires_at is not None
    if scope.agent_id is not None:  # an agent's credential speaks for the agent, never for its sponsor
        user_id, display_name, owner = f"agent:{scope.agent_id}", device.name, False
    else:
        # A credential limited to one workspace, or to reads, does not carry the server owner's server-wide powers
        # (some owner reads act on the network: sso.testConnection).
        owner = owner_id is not None and owner_id == user.id and scope.workspace_id is None and not scope.read_only
        user_id, display_name = user.id, user.display_name
    return Principal(
        user_id,
        device.id,
        display_name,
        owner,
        authority=version,
        workspace_id=scope.workspace_id,
        read_only=scope.read_only,
        tools=scope.tools,
        agent_id=scope.agent_id,
        space_id=scope.space_id,
        delegated=delegated,
    )


class Authenticator:
    def __init__(
        self,
        engine: AsyncEngine,
        clock: Clock,
        authority: AuthorityCache,
        settings: ServerSettings,
        users: Users,
        uses: LastUses,
    ) -> None:
        self._db = engine
        self._clock = clock
        self._authority = authority
        self._settings = settings
        self._users = users
        self._uses = uses

    async def authenticate(self, token: str, *, touch: bool = True) -> Principal:
        """Check a device credential on use: it exists, is not revoked, its user is active, and the session
        policy (max age, idle timeout) allows it. Raises ``Unauthenticated`` with the reason.

        ``touch=False`` checks without counting as a use (re-checking the credential behind an open watch)."""
        if not token:
            raise Unauthenticated("no device credential was given")
        key = token_hash(token)
        version = await self._authority.current()  # one read of the counter serves the whole check
        found = await self._authority.get(
            ("device", key), lambda: self._load_device_where(t.devices.c.token_hash == key), as_of=version
        )
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

    async def authenticate_bearer(self, request: HTTPConnection) -> Principal:
        """Authenticate an HTTP request by its ``Authorization: Bearer <device credential>`` header."""
        token = bearer_token(request.headers.get("authorization"))
        if token is None:
            raise Unauthenticated("send the device credential as Authorization: Bearer <token>")
        return await self.authenticate(token)

    async def _usable(self, found: tuple[Device, User] | None, version: int, *, touch: bool) -> Principal:
        if found is None:
            raise Unauthenticated("the device credential is not known")
        device, user = found
        if device.revoked_at is not None:
            raise Unauthenticated("the device credential was revoked")
        if not user.active:
            raise Unauthenticated("the user is deactivated")
        authority = await self._settings.server_authority(as_of=version)
        now = self._clock.now()
        why = authority.policy.violation(device, now, last_used_at=self._uses.last_used_at(device))
        if why is not None:
            raise Unauthenticated(why)
        if touch:
            await self._uses.used(device.id, now)
        return principal_of(device, user, authority.owner_id, version)

    async def _load_device_where(self, which: sa.ColumnElement[bool]) -> tuple[Device, User] | None:
        q = sa.select(t.devices).where(which)
        async with self._db.connect() as conn:
            row = (await conn.execute(q)).first()
        if row is None:
            return None
        device = device_from_row(row)
        user = await self._users.get_user(device.user_id)
        if user is None:
            raise Unauthenticated("the credential's user no longer exists")
        return device, user
