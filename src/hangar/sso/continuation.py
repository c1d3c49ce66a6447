"""Sign-ins that continue a flow of this server instead of handing a credential to a client.

The OAuth authorization server's sign-in page (``hangar.oauth``) offers the SSO login: it sends the browser to
``/saml/login`` or ``/oidc/login`` with ``relay=oauth&continuation=<its pending request>``. The continuation is
kept with the pending sign-in; when the provider's response is verified no device credential is made. Instead
a one-time hand-off code (random, stored as its SHA-256 with the user and the continuation, good for
``HANDOFF_TTL``) goes in a 303 to ``RETURN_PATH`` on this origin, and that flow takes it (``SignInHandoffs.take``)
and checks that the continuation is the request this browser holds. So the identity travels server-side: no
credential is ever in a URL, and a hand-off that reaches another browser (or comes back for another request)
is refused there.

Every other relay ends as before, with the credential hand-off of CONTRACTS section 4 (``hangar.sso.handoff``).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlencode

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.responses import RedirectResponse, Response

from hangar.core.clock import Clock
from hangar.core.context import AppContext
from hangar.core.ids import token_hash
from hangar.core.types import UtcDateTime
from hangar.sso.config import Connection
from hangar.sso.handoff import OAUTH_RELAY, LoginIntent, success_response
from hangar.sso.login import SsoIdentity, complete_login, resolve_user

RETURN_PATH = "/auth/oauth/sso-return"
HANDOFF_TTL = timedelta(minutes=2)
_NO_STORE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}

_metadata = sa.MetaData()
sso_handoffs = sa.Table(  # created by migration s0008
    "sso_handoffs",
    _metadata,
    sa.Column("code_hash", sa.String(64), primary_key=True),
    sa.Column("user_id", sa.String(36), nullable=False),
    sa.Column("continuation", sa.String(128), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("expires_at", UtcDateTime(), nullable=False),
)


@dataclass(frozen=True)
class Handoff:
    user_id: str
    continuation: str


class SignInHandoffs:
    """One-time hand-offs of a verified identity to the flow a sign-in continues (provided by the SSO part)."""

    def __init__(self, engine: AsyncEngine, clock: Clock) -> None:
        self._db = engine
        self._clock = clock

    async def mint(self, user_id: str, continuation: str) -> str:
        code = secrets.token_urlsafe(32)
        now = self._clock.now()
        async with self._db.begin() as conn:
            await conn.execute(sa.delete(sso_handoffs).where(sso_handoffs.c.expires_at <= now))
            await conn.execute(
                sa.insert(sso_handoffs).values(
                    code_hash=token_hash(code),
                    user_id=user_id,
                    continuation=continuation,
                    created_at=now,
                    expires_at=now + HANDOFF_TTL,
                )
            )
        return code

    async def take(self, code: str) -> Handoff | None:
        """Use up a hand-off: the first caller gets it while it lives, every later one gets None."""
        if not code:
            return None
        async with self._db.begin() as conn:
            row = (
                await conn.execute(
                    sa.delete(sso_handoffs)
                    .where(sso_handoffs.c.code_hash == token_hash(code))
                    .returning(sso_handoffs.c.user_id, sso_handoffs.c.continuation, sso_handoffs.c.expires_at)
                )
            ).first()
        if row is None or row.expires_at <= self._clock.now():
            return None
        return Handoff(row.user_id, row.continuation)


async def signed_in(
    ctx: AppContext, conn: Connection, who: SsoIdentity, *, kind: str, device_name: str, intent: LoginIntent
) -> Response:
    """The answer to a verified SSO login: the credential hand-off, or the continuation of a flow of ours."""
    if intent.relay == OAUTH_RELAY and intent.continuation is not None:
        user, *_ = await resolve_user(ctx, conn, who, kind=kind)
        code = await ctx.service(SignInHandoffs).mint(user.id, intent.continuation)
        location = f"{RETURN_PATH}?{urlencode({'handoff': code})}"
        return RedirectResponse(location, status_code=303, headers=_NO_STORE)
    outcome = await complete_login(ctx, conn, who, kind=kind, device_name=device_name)
    return success_response(ctx.settings, intent, outcome.token)
