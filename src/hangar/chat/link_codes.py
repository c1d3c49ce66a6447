"""Link codes: what a person mints in Hangar and sends from the chat (``/<command> link <code>``) to link their chat
account to their Hangar user.

Codes are rows of the workspace's database (``chat_link_codes``), so a code minted through one server process is
redeemed by whichever process holds the workspace's chat connection, and survives a restart. A row keeps the
SHA-256 of the code, never the code (as pairing codes are kept), and nothing logs a code. A code is six characters
of 31 (no 0/O, 1/I), lasts 15 minutes on the injected clock and serves once: redeeming is one ``DELETE ...
RETURNING`` of a live row, so of two processes redeeming the same code at once exactly one gets its user. A member
holds at most one code per provider (a unique index): minting replaces the previous one, under the write lock so
two processes minting at once leave one. Expired rows are removed by the next mint or redemption.

Redemption is case-insensitive, and an unknown, expired, used, foreign-workspace or wrong-provider code answers
``None`` alike (a code of another provider stays usable by its owner). Each chat account may fail
``LINK_FAILURES.burst`` times (5), then once every 3 minutes (the bucket refills 5 per 15 minutes, a code's
lifetime); past it its attempts are refused unread (``TooManyAttempts``). That bucket is kept by the process that
redeems, the connection's holder, which receives every attempt of the workspace's chat accounts.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

import sqlalchemy as sa

from hangar.chat.tables import chat_link_codes
from hangar.core.context import AppContext
from hangar.core.db import write_transaction
from hangar.core.ids import token_hash
from hangar.httpkit.ratelimit import Budget, RateLimits

CODE_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTVWXYZ"
CODE_LENGTH = 6
CODE_LIFETIME = timedelta(minutes=15)
LINK_FAILURES = Budget(burst=5, per_minute=5 / 15, what="wrong link codes from this chat account")
_MINT_TRIES = 5  # a fresh code colliding with a live one of the workspace is drawn again


class LinkCodes:
    """Outstanding link codes, in each workspace's database."""

    def __init__(self, app: AppContext) -> None:
        self._app = app
        self._failures = RateLimits(app.clock.monotonic, {"link": LINK_FAILURES})

    async def mint(self, workspace_id: str, provider: str, user_id: str) -> tuple[str, datetime]:
        """A new code for the member, replacing their previous one; the code and when it expires."""
        t = chat_link_codes
        engine = await self._app.dbs.workspace(workspace_id)
        for attempt in range(_MINT_TRIES):
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            now = self._app.clock.now()
            expires_at = now + CODE_LIFETIME
            try:
                async with write_transaction(engine) as conn:
                    await conn.execute(
                        sa.delete(t).where(
                            sa.or_(t.c.expires_at <= now, sa.and_(t.c.provider == provider, t.c.user_id == user_id))
                        )
                    )
                    await conn.execute(
                        sa.insert(t).values(
                            code_hash=token_hash(code),
                            provider=provider,
                            user_id=user_id,
                            created_at=now,
                            expires_at=expires_at,
                        )
                    )
            except sa.exc.IntegrityError:  # the same code is live for another member: draw again
                if attempt == _MINT_TRIES - 1:
                    raise
                continue
            return code, expires_at
        raise AssertionError("unreachable")

    async def redeem(self, workspace_id: str, provider: str, code: str, account: tuple[str, str]) -> str | None:
        """The user the code was minted for, once; ``None`` for every kind of failure alike. ``account`` is the chat
        account trying it (team, user): one that has failed too often is refused (``TooManyAttempts``) unread."""
        key = "\x00".join((workspace_id, provider, *account))
        self._failures.refuse_unless_free("link", key, f"chat account {'/'.join(account)}")
        user_id = await self._take(workspace_id, provider, code)
        if user_id is not None:
            self._failures.give_back("link", key)
        return user_id

    async def _take(self, workspace_id: str, provider: str, code: str) -> str | None:
        t = chat_link_codes
        typed = code.strip().upper()
        if not typed:
            return None
        now = self._app.clock.now()
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            # A code of another provider is not used up by a wrong attempt: its owner may still use it.
            taken = await conn.execute(
                sa.delete(t)
                .where(t.c.code_hash == token_hash(typed), t.c.provider == provider, t.c.expires_at > now)
                .returning(t.c.user_id)
            )
            user_id = taken.scalar()
            await conn.execute(sa.delete(t).where(t.c.expires_at <= now))
        return None if user_id is None else str(user_id)
