"""A new person in one write transaction: their user row, their memberships (each staged with the event that
announces it, ``hangar.core.outbox``) and, when asked, their first device credential.

Why one transaction: a just-in-time sign-in (SSO) made each of these rows in a transaction of its own, so the
server database's write lock was taken once a row, and a failure between two of them left a person without the
memberships or the credential their sign-in was for. Now all or nothing is written, under one hold of the lock.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core import outbox
from hangar.core.clock import Clock
from hangar.core.ids import new_id, new_token
from hangar.core.principal import Role
from hangar.errors import Conflict
from hangar.identity.devices import device_insert
from hangar.identity.events import MemberAdded
from hangar.identity.models import User
from hangar.identity.users import DUPLICATE_USER, user_insert
from hangar.identity.workspaces import Relay, membership_insert


class Provisioning:
    def __init__(self, engine: AsyncEngine, clock: Clock, relay: Relay | None) -> None:
        self._db = engine
        self._clock = clock
        self._relay = relay  # carries the staged membership events to their workspaces once committed

    async def provision_user(
        self,
        *,
        email: str | None,
        display_name: str,
        sso_issuer: str | None = None,
        sso_subject: str | None = None,
        memberships: Sequence[tuple[str, Role]] = (),
        device_name: str | None = None,
    ) -> tuple[User, str | None]:
        """Create a user who is a member of each ``(workspace id, role)`` of ``memberships`` and, with a
        ``device_name``, holds a new device credential: the user and the credential's token (answered once, stored
        only hashed; None without ``device_name``). ``Conflict`` when the identity-provider subject is taken (the
        user exists), and then nothing is written."""
        now = self._clock.now()
        user = User(new_id(), email, display_name, now, None, sso_issuer, sso_subject)
        token = new_token() if device_name is not None else None
        try:
            async with self._db.begin() as conn:
                await conn.execute(user_insert(user))
                for workspace_id, role in memberships:
                    await conn.execute(membership_insert(workspace_id, user.id, role, now))
                    added = MemberAdded(workspace_id=workspace_id, user_id=user.id, role=role.name)
                    await outbox.stage(conn, added, now)
                if device_name is not None and token is not None:
                    await conn.execute(device_insert(new_id(), user.id, device_name, token, now))
        except sa.exc.IntegrityError as exc:
            raise Conflict(DUPLICATE_USER) from exc
        if memberships and self._relay is not None:
            await self._relay()
        return user, token
