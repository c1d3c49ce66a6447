"""A new person in one write transaction: their user row, their memberships (each staged with the event that
announces it, ``hangar.core.outbox``) and, when asked, their first device credential.

Why one transaction: a just-in-time sign-in (SSO) made each of these rows in a transaction of its own, so the
server database's write lock was taken once a row, and a failure between two of them left a person without the
memberships or the credential their sign-in was for. Now all or nothing is written, under one hold of the lock.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core import outbox
from hangar.core.clock import Clock
from hangar.core.ids import new_id, new_token
from hangar.core.principal import Role
from hangar.errors import Conflict
from hangar.identity import tables as t
from hangar.identity.devices import device_insert
from hangar.identity.events import MemberAdded
from hangar.identity.models import User
from hangar.identity.users import DUPLICATE_USER, user_insert
from hangar.identity.workspaces import Relay, membership_insert

_EVERY_WORKSPACE = sa.select(t.workspaces.c.id).order_by(t.workspaces.c.created_at)


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
        join_as: Role | None = None,
        device_name: str | None = None,
    ) -> tuple[User, str | None]:
        """Create a user who, with ``join_as``, is a member of every workspace with that role and, with a
        ``device_name``, holds a new device credential: the user and the credential's token (answered once, stored
        only hashed; None without ``device_name``). ``Conflict`` when the identity-provider subject is taken (the
        user exists), and then nothing is written."""
        now = self._clock.now()
        user = User(new_id(), email, display_name, now, None, sso_issuer, sso_subject)
        token = new_token() if device_name is not None else None
        joined: list[str] = []
        try:
            async with self._db.begin() as conn:
                await conn.execute(user_insert(user))
                if join_as is not None:
                    # Read in the same transaction: a workspace made meanwhile is joined with the rest, or not at all.
                    joined = list((await conn.execute(_EVERY_WORKSPACE)).scalars())
                for workspace_id in joined:
                    assert join_as is not None
                    await conn.execute(membership_insert(workspace_id, user.id, join_as, now))
                    added = MemberAdded(workspace_id=workspace_id, user_id=user.id, role=join_as.name)
                    await outbox.stage(conn, added, now)
                if token is not None and device_name is not None:
                    await conn.execute(device_insert(new_id(), user.id, device_name, token, now))
        except sa.exc.IntegrityError as exc:
            raise Conflict(DUPLICATE_USER) from exc
        if joined and self._relay is not None:
            await self._relay()
        return user, token
