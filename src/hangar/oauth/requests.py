"""Authorization requests waiting for the person, in the server database (a restart loses none).

A request is created when ``/auth/oauth/authorize`` has checked everything the client sent; from then on the
sign-in and consent pages name it by its id. It is bound to the browser that opened it: a random cookie whose
SHA-256 is kept with the request (``hangar.oauth.browser``). The person is bound to it when they sign in
(``sign_in``); the consent decision takes it out (``take``), so a request is decided once. Requests expire
after ``REQUEST_TTL``; expired ones go on every insert, and past ``MAX_REQUESTS`` the oldest go first.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core.clock import Clock
from hangar.core.ids import token_hash
from hangar.oauth import tables as t

REQUEST_TTL = timedelta(minutes=30)  # long enough to fetch a pairing code from another device
MAX_REQUESTS = 10_000


@dataclass(frozen=True)
class AuthRequest:
    id: str
    client_id: str
    redirect_uri: str
    state: str | None
    code_challenge: str
    resource: str | None
    binding_hash: str
    user_id: str | None
    signed_in_with: str | None
    expires_at: datetime

    def __repr__(self) -> str:
        return f"AuthRequest(id={self.id!r}, client_id={self.client_id!r}, user_id={self.user_id!r})"


def _request(row: Any) -> AuthRequest:
    return AuthRequest(
        row.id,
        row.client_id,
        row.redirect_uri,
        row.state,
        row.code_challenge,
        row.resource,
        row.binding_hash,
        row.user_id,
        row.signed_in_with,
        row.expires_at,
    )


class PendingRequests:
    def __init__(self, engine: AsyncEngine, clock: Clock) -> None:
        self._db = engine
        self._clock = clock

    async def open(
        self, *, client_id: str, redirect_uri: str, state: str | None, code_challenge: str, resource: str | None
    ) -> tuple[AuthRequest, str]:
        """A new request and the browser-binding secret for its cookie (shown this once)."""
        now = self._clock.now()
        binding = secrets.token_urlsafe(32)
        request = AuthRequest(
            secrets.token_urlsafe(24),
            client_id,
            redirect_uri,
            state,
            code_challenge,
            resource,
            token_hash(binding),
            None,
            None,
            now + REQUEST_TTL,
        )
        async with self._db.begin() as conn:
            await conn.execute(sa.delete(t.requests).where(t.requests.c.expires_at <= now))
            await conn.execute(
                sa.insert(t.requests).values(
                    id=request.id,
                    client_id=client_id,
                    redirect_uri=redirect_uri,
                    state=state,
                    code_challenge=code_challenge,
                    resource=resource,
                    binding_hash=request.binding_hash,
                    created_at=now,
                    expires_at=request.expires_at,
                )
            )
            (count,) = (await conn.execute(sa.select(sa.func.count()).select_from(t.requests))).one()
            if count > MAX_REQUESTS:
                oldest = sa.select(t.requests.c.id).order_by(t.requests.c.created_at).limit(count - MAX_REQUESTS)
                await conn.execute(sa.delete(t.requests).where(t.requests.c.id.in_(oldest)))
        return request, binding

    async def get(self, request_id: str | None) -> AuthRequest | None:
        """The live request ``request_id`` names, or None (unknown, decided or expired)."""
        if not request_id or len(request_id) > 64:
            return None
        async with self._db.connect() as conn:
            row = (await conn.execute(sa.select(t.requests).where(t.requests.c.id == request_id))).first()
        if row is None or row.expires_at <= self._clock.now():
            return None
        return _request(row)

    async def sign_in(self, request_id: str, user_id: str, how: str) -> None:
        async with self._db.begin() as conn:
            await conn.execute(
                sa.update(t.requests).where(t.requests.c.id == request_id).values(user_id=user_id, signed_in_with=how)
            )

    async def take(self, request_id: str) -> AuthRequest | None:
        """Remove the request for its decision: the first caller gets it while it lives, every later one None."""
        async with self._db.begin() as conn:
            row = (
                await conn.execute(sa.delete(t.requests).where(t.requests.c.id == request_id).returning(*t.requests.c))
            ).first()
        if row is None or row.expires_at <= self._clock.now():
            return None
        return _request(row)
