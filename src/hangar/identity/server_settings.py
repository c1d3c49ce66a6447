"""Server-wide settings: identity's own (the server owner, the pairing flag, the session policy) and the ones
other parts declare (``Part.server_settings``), validated before they are stored.

What every authorization decision reads of them is one ``ServerAuthority`` snapshot, kept in the authority
cache (``hangar.identity.authority``). The server owner is made here too: the owner's user row and the setting
naming it are written in one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core.clock import Clock
from hangar.core.db import write_transaction
from hangar.core.ids import new_id
from hangar.core.settings import SettingSpec
from hangar.errors import InvalidArgs
from hangar.identity import tables as t
from hangar.identity.authority import AuthorityCache
from hangar.identity.models import SessionPolicy, User
from hangar.identity.users import user_from_row

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


class ServerSettings:
    def __init__(
        self, engine: AsyncEngine, clock: Clock, authority: AuthorityCache, declared: Iterable[SettingSpec] = ()
    ) -> None:
        self._db = engine
        self._clock = clock
        self._authority = authority
        # The server settings other parts declared; identity's own keys aside, nothing else is written.
        self._declared: dict[str, SettingSpec] = {}
        for spec in declared:
            if spec.key in self._declared or spec.key in OWN_SETTINGS:
                raise ValueError(f"server setting {spec.key!r} is declared twice")
            self._declared[spec.key] = spec

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

    async def get_setting(self, key: str) -> Any:
        async with self._db.connect() as conn:
            row = (
                await conn.execute(sa.select(t.server_settings.c.value).where(t.server_settings.c.key == key))
            ).first()
        return None if row is None else row[0]

    async def set_setting(self, key: str, value: Any) -> None:
        """Store a server setting: one of identity's own, or one a part declared (validated first)."""
        if key not in OWN_SETTINGS:
            spec = self._declared.get(key)
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

    async def pairing_enabled(self, *, as_of: int | None = None) -> bool:
        """``as_of``: the authority counter the caller's request was checked under (its one read serves the
        request's every access decision; a counter that moved since is read again)."""
        return (await self.server_authority(as_of=as_of)).pairing_enabled

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
                    return user_from_row(found)
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
