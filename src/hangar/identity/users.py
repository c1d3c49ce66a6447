"""User records: looked up by id, e-mail or identity-provider subject (the SSO hand-off finds or makes its
person here), created, updated, deactivated and reactivated.

Deactivating revokes every credential of the user in the same transaction, so no credential outlives its
holder's access even for a moment.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core.clock import Clock
from hangar.core.ids import new_id
from hangar.errors import Conflict, InvalidArgs, NotFound
from hangar.identity import tables as t
from hangar.identity.models import User

DUPLICATE_USER = "a user with that identity-provider subject already exists"
_UPDATABLE = frozenset({"email", "display_name", "deactivated_at", "sso_issuer", "sso_subject"})


def user_from_row(row: Any) -> User:
    return User(
        id=row.id,
        email=row.email,
        display_name=row.display_name,
        created_at=row.created_at,
        deactivated_at=row.deactivated_at,
        sso_issuer=row.sso_issuer,
        sso_subject=row.sso_subject,
    )


def user_insert(user: User) -> sa.Insert:
    """The insert of a new user's row (also made by ``hangar.identity.provisioning``, with their memberships)."""
    return sa.insert(t.users).values(
        id=user.id,
        email=user.email,
        display_name=user.display_name,
        created_at=user.created_at,
        sso_issuer=user.sso_issuer,
        sso_subject=user.sso_subject,
    )


class Users:
    def __init__(self, engine: AsyncEngine, clock: Clock) -> None:
        self._db = engine
        self._clock = clock

    async def get_user(self, user_id: str) -> User | None:
        async with self._db.connect() as conn:
            row = (await conn.execute(sa.select(t.users).where(t.users.c.id == user_id))).first()
        return None if row is None else user_from_row(row)

    async def find_user_by_email(self, email: str) -> User | None:
        q = sa.select(t.users).where(sa.func.lower(t.users.c.email) == email.lower()).order_by(t.users.c.created_at)
        async with self._db.connect() as conn:
            row = (await conn.execute(q)).first()
        return None if row is None else user_from_row(row)

    async def find_user_by_sso(self, issuer: str, subject: str) -> User | None:
        q = sa.select(t.users).where(t.users.c.sso_issuer == issuer, t.users.c.sso_subject == subject)
        async with self._db.connect() as conn:
            row = (await conn.execute(q)).first()
        return None if row is None else user_from_row(row)

    async def find_sign_in(self, issuer: str, subject: str, email: str | None) -> tuple[User | None, User | None]:
        """``find_user_by_sso`` and ``find_user_by_email`` in one query (an SSO sign-in asks both): the user pinned
        to ``(issuer, subject)``, and the oldest user with ``email`` (None when not given)."""
        u = t.users.c
        pinned = sa.and_(u.sso_issuer == issuer, u.sso_subject == subject)
        wanted = pinned if email is None else sa.or_(pinned, sa.func.lower(u.email) == email.lower())
        async with self._db.connect() as conn:
            rows = [
                user_from_row(r) for r in (await conn.execute(sa.select(t.users).where(wanted).order_by(u.created_at)))
            ]
        by_pin = next((r for r in rows if (r.sso_issuer, r.sso_subject) == (issuer, subject)), None)
        by_email = next((r for r in rows if email is not None and (r.email or "").lower() == email.lower()), None)
        return by_pin, by_email

    async def list_users(self) -> list[User]:
        async with self._db.connect() as conn:
            rows = (await conn.execute(sa.select(t.users).order_by(t.users.c.created_at))).all()
        return [user_from_row(r) for r in rows]

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
                await conn.execute(user_insert(user))
        except sa.exc.IntegrityError as exc:
            raise Conflict(DUPLICATE_USER) from exc
        return user

    async def update_user(self, user_id: str, **fields: Any) -> User:
        unknown = set(fields) - _UPDATABLE
        if unknown:
            raise InvalidArgs(f"unknown user fields: {', '.join(sorted(unknown))}", field=sorted(unknown)[0])
        try:
            async with self._db.begin() as conn:
                done = await conn.execute(sa.update(t.users).where(t.users.c.id == user_id).values(**fields))
        except sa.exc.IntegrityError as exc:
            raise Conflict(DUPLICATE_USER) from exc
        if done.rowcount == 0:
            raise NotFound(f"user {user_id} does not exist")
        return await self._existing(user_id)

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
        return await self._existing(user_id)

    async def reactivate_user(self, user_id: str) -> User:
        return await self.update_user(user_id, deactivated_at=None)

    async def _existing(self, user_id: str) -> User:
        """A user just changed, read back (the change proved it exists)."""
        user = await self.get_user(user_id)
        assert user is not None
        return user
