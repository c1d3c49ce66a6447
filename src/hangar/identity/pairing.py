"""Invite codes, device pairing codes and sign-in link codes, redeemed at ``POST /auth/pair``.

An invite code brings a new person into a workspace with a role; a device pairing code adds a device to the
user who minted it. Both are single-use, expire, are stored hashed, and are refused wholesale while the
server-wide "manual pairing allowed" flag is off.

A sign-in link code is the code inside the server owner's one-time sign-in link (``/#signin=<code>``, printed at
the first start and by ``hangar admin sign-in-link``): single-use, short-lived and stored hashed like the others,
and redeemed the same way into a new device of the owner. Only someone holding the data directory mints one (the
same power as ``hangar admin owner-token``), so the pairing flag does not refuse it: a server that signs people in
only through SSO still lets its operator in. It is longer than a typed code (it travels in a URL, never typed),
and that length alone tells the server a code came from a link, so a refusal can say what to do without saying
whether the code ever existed.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core.clock import Clock
from hangar.core.ids import token_hash
from hangar.core.principal import Role
from hangar.errors import InvalidArgs, Refused
from hangar.identity import tables as t
from hangar.identity.events import MemberAdded
from hangar.identity.service import IdentityService

# No 0/O, 1/I/L: codes are read aloud and typed by hand.
_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
_CODE_LENGTH = 10
_LINK_CODE_LENGTH = 24  # about 119 bits
INVITE_LIFETIME = timedelta(days=7)
DEVICE_CODE_LIFETIME = timedelta(minutes=15)
# As short as a device pairing code's: a link is opened right after it is printed, and a new one is a command away.
SIGN_IN_LINK_LIFETIME = timedelta(minutes=15)
SIGN_IN_LINK_REFUSED = (
    "this sign-in link was used already or has expired (a link works once, within 15 minutes of being printed); "
    "print a new one on the server with `hangar admin sign-in-link` (its full command is in the server's output)"
)
CODE_REFUSED = "the pairing code is unknown, used or expired"


class PairingDisabled(Refused):
    """Manual pairing is forbidden on this server (an SSO connection is the way in)."""

    code = "pairing_disabled"  # the code CONTRACTS section 3 gives this refusal at /auth/pair


@dataclass(frozen=True)
class Paired:
    token: str
    user_id: str
    workspace_id: str | None
    role: str | None = None


def _normalize(code: str) -> str:
    return code.strip().upper().replace("-", "").replace(" ", "")


class Pairing:
    def __init__(self, engine: AsyncEngine, identity: IdentityService, clock: Clock) -> None:
        self._db = engine
        self._identity = identity
        self._clock = clock

    async def _mint(
        self, kind: str, created_by: str, lifetime: timedelta, length: int = _CODE_LENGTH, **fields: str | None
    ) -> str:
        code = "".join(secrets.choice(_ALPHABET) for _ in range(length))
        now = self._clock.now()
        async with self._db.begin() as conn:
            await conn.execute(
                sa.insert(t.pairing_codes).values(
                    code_hash=token_hash(code),
                    kind=kind,
                    created_by=created_by,
                    created_at=now,
                    expires_at=now + lifetime,
                    **fields,
                )
            )
        return code

    async def mint_invite(self, workspace_id: str, role: Role, created_by: str) -> str:
        return await self._mint("invite", created_by, INVITE_LIFETIME, workspace_id=workspace_id, role=role.name)

    async def mint_device_code(self, user_id: str) -> str:
        return await self._mint("device", user_id, DEVICE_CODE_LIFETIME, user_id=user_id)

    async def mint_sign_in_code(self, user_id: str) -> str:
        """The code of a one-time sign-in link that adds a device to ``user_id`` (the server owner's, minted by
        the operator's command line; never by an op)."""
        return await self._mint("signin", user_id, SIGN_IN_LINK_LIFETIME, _LINK_CODE_LENGTH, user_id=user_id)

    async def _check_minter(self, workspace_id: str, minter: str, role: Role) -> None:
        """An invite admits no more than its minter may grant *now*: a minter since demoted or removed cannot
        admit admins through a code minted before (the code is spent either way)."""
        current = await self._identity.role_of(workspace_id, minter)
        may_grant = current is not None and current >= Role.admin and role <= current
        if not may_grant and not await self._identity.is_server_owner(minter):
            raise Refused(
                f"this invite was minted by someone who can no longer admit people as {role.name}; "
                "ask a current admin for a new code"
            )

    async def _spend(self, code: str, kinds: frozenset[str]) -> Any:
        """Use up a live code of one of ``kinds`` and answer its row. A code of another kind is refused as if
        unknown, and stays unspent. A code of a sign-in link's length is refused with the sentence that says to print
        a new link (the length is the caller's, so the answer tells nothing about the code)."""
        if not isinstance(code, str) or not _normalize(code):
            raise InvalidArgs("code is required", field="code")
        from_link = "signin" in kinds and len(_normalize(code)) == _LINK_CODE_LENGTH
        if not from_link and not await self._identity.pairing_enabled():
            raise PairingDisabled("manual pairing is disabled on this server; sign in with single sign-on")
        refused = SIGN_IN_LINK_REFUSED if from_link else CODE_REFUSED
        now = self._clock.now()
        key = token_hash(_normalize(code))
        async with self._db.begin() as conn:
            row = (await conn.execute(sa.select(t.pairing_codes).where(t.pairing_codes.c.code_hash == key))).first()
            # Unknown, used and expired codes fail alike: the answer is no oracle.
            if row is None or row.used_at is not None or row.expires_at <= now or row.kind not in kinds:
                raise InvalidArgs(refused, field="code")
            claimed = await conn.execute(
                sa.update(t.pairing_codes)
                .where(t.pairing_codes.c.code_hash == key, t.pairing_codes.c.used_at.is_(None))
                .values(used_at=now)
            )
            if claimed.rowcount == 0:
                raise InvalidArgs(refused, field="code")
        return row

    async def _used_by(self, code: str, user_id: str) -> None:
        async with self._db.begin() as conn:
            await conn.execute(
                sa.update(t.pairing_codes)
                .where(t.pairing_codes.c.code_hash == token_hash(_normalize(code)))
                .values(used_by=user_id)
            )

    async def sign_in(self, code: str) -> str:
        """Spend a device pairing code to sign its minter in somewhere that issues its own credential (the
        OAuth authorization server) and answer their user id; no device is made here. Invite codes are not
        taken: they bring a new person in, which only ``/auth/pair`` does."""
        row = await self._spend(code, frozenset({"device"}))
        await self._used_by(code, row.user_id)
        return str(row.user_id)

    async def redeem(self, code: str, device_name: str) -> Paired:
        row = await self._spend(code, frozenset({"invite", "device", "signin"}))
        name = (device_name or "").strip() or "device"
        if row.kind == "invite":
            await self._check_minter(row.workspace_id, row.created_by, Role[row.role])
            user = await self._identity.create_user(email=None, display_name=name)
            added = MemberAdded(workspace_id=row.workspace_id, user_id=user.id, role=row.role)
            await self._identity.add_member(row.workspace_id, user.id, Role[row.role], announce=added)
            user_id, ws, role = user.id, row.workspace_id, row.role
        else:
            user_id, ws, role = row.user_id, None, None
        token = await self._identity.issue_device(user_id, name)
        await self._used_by(code, user_id)
        return Paired(token, user_id, ws, role)
