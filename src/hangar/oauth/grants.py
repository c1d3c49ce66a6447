"""Authorization codes, grants and refresh tokens: what a consent becomes, and how it is kept and ended.

- An approved request becomes an authorization code (``CODE_TTL``, single use) bound to the client, the redirect
  URI, the PKCE challenge, the person and the scope they chose.
- Redeeming it (with the verifier whose S256 is the challenge) makes the grant: one device credential of the
  person, named "<client name> (OAuth)", limited to the chosen workspace and to reads when chosen, carrying the
  client's id. Its token is the access token, good for ``ACCESS_TTL``; so the grant is listed by
  ``devices.list``, ended by ``devices.revoke``, and held to the session policy like any credential.
- A refresh gives the same credential a new token (the old one stops at once) and a new deadline, and replaces
  the refresh token (``REFRESH_TTL`` each). The session policy still holds: past its maximum age or idle
  timeout (or once the person is deactivated) a refresh is refused and the grant ends.
- A used refresh token presented again, or a code redeemed twice, means one of the two presenters is not the
  client: the whole grant is revoked (RFC 9700 sections 2.2.2 and 4.14), and the event is audited.

Audit rows (``oauth.authorized``, ``oauth.codeReused``, ``oauth.refreshReused``, ``oauth.revoked``) go to the
audit log of the workspace a grant is limited to, or of every workspace of the person for a grant that reaches
all of them. No token, code or secret is ever written there or to the server log.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import sqlalchemy as sa

from hangar.core.context import AppContext
from hangar.core.db import write_transaction
from hangar.core.ids import new_id, token_hash
from hangar.errors import HangarError, NotFound, Unauthenticated
from hangar.identity import DeviceScope, IdentityService
from hangar.oauth import tables as t
from hangar.oauth.clients import Client
from hangar.oauth.errors import OAuthError
from hangar.oauth.requests import AuthRequest

log = logging.getLogger(__name__)

CODE_TTL = timedelta(minutes=2)
ACCESS_TTL = timedelta(hours=1)
REFRESH_TTL = timedelta(days=30)
VERIFIER = re.compile(r"[A-Za-z0-9._~-]{43,128}")  # RFC 7636 section 4.1


@dataclass(frozen=True)
class Tokens:
    access_token: str
    expires_in: int
    refresh_token: str | None

    def __repr__(self) -> str:
        return f"Tokens(expires_in={self.expires_in})"

    def wire(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "access_token": self.access_token,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
        }
        if self.refresh_token is not None:
            body["refresh_token"] = self.refresh_token
        return body


@dataclass(frozen=True)
class GrantRow:
    id: str
    client_id: str
    user_id: str
    device_id: str
    workspace_id: str | None


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def _presented(row: Any, client: Client, redirect_uri: str | None, verifier: str | None) -> Any:
    """The code's row, when it exists and this is the client it was issued to, with its redirect URI and verifier."""
    if row is None:
        raise _invalid_grant("the authorization code is unknown")
    if row.client_id != client.client_id:
        raise _invalid_grant("the authorization code was issued to another client")
    if redirect_uri != row.redirect_uri:
        raise _invalid_grant("redirect_uri does not match the one of the authorization request")
    if verifier is None:
        raise OAuthError("invalid_request", "code_verifier is required (PKCE)")
    if not VERIFIER.fullmatch(verifier) or not secrets.compare_digest(s256(verifier), row.code_challenge):
        raise _invalid_grant("code_verifier does not match the code_challenge")
    return row


def _invalid_grant(description: str) -> OAuthError:
    return OAuthError("invalid_grant", description)


class Grants:
    def __init__(self, app: AppContext) -> None:
        self._app = app
        self._db = app.dbs.server
        self._clock = app.clock

    @property
    def _identity(self) -> IdentityService:
        return self._app.service(IdentityService)

    # -- codes ---------------------------------------------------------------------------------------------

    async def mint_code(self, request: AuthRequest, *, user_id: str, workspace_id: str | None, read_only: bool) -> str:
        code = secrets.token_urlsafe(32)
        now = self._clock.now()
        async with self._db.begin() as conn:
            # Codes live two minutes; a used one is kept as long as its grant may need revoking on reuse.
            await conn.execute(sa.delete(t.codes).where(t.codes.c.expires_at <= now - REFRESH_TTL))
            await conn.execute(
                sa.insert(t.codes).values(
                    code_hash=token_hash(code),
                    client_id=request.client_id,
                    redirect_uri=request.redirect_uri,
                    code_challenge=request.code_challenge,
                    resource=request.resource,
                    user_id=user_id,
                    workspace_id=workspace_id,
                    read_only=read_only,
                    created_at=now,
                    expires_at=now + CODE_TTL,
                )
            )
        return code

    async def redeem(self, client: Client, code: str, *, redirect_uri: str | None, verifier: str | None) -> Tokens:
        """Exchange a code for a grant's tokens; ``OAuthError("invalid_grant")`` naming what did not match."""
        now = self._clock.now()
        key = token_hash(code)
        grant_id = new_id()
        async with write_transaction(self._db) as conn:
            found = (await conn.execute(sa.select(t.codes).where(t.codes.c.code_hash == key))).first()
            # Only the presenter the code was made for (its client, redirect URI and PKCE verifier) changes
            # anything: someone else holding a stolen code can neither burn it nor revoke what it gave.
            row = _presented(found, client, redirect_uri, verifier)
            if row.used_at is None:
                await conn.execute(
                    sa.update(t.codes).where(t.codes.c.code_hash == key).values(used_at=now, grant_id=grant_id)
                )
            else:
                await conn.execute(sa.update(t.codes).where(t.codes.c.code_hash == key).values(reused_at=now))
        if row.used_at is not None:
            if row.grant_id is not None:
                await self._revoke(row.grant_id, "oauth.codeReused")
            log.warning("OAuth: an authorization code of client %s was presented again", row.client_id)
            raise _invalid_grant("the authorization code was already used; what it gave is revoked")
        if row.expires_at <= now:
            raise _invalid_grant("the authorization code has expired")
        user = await self._identity.get_user(row.user_id)
        if user is None or not user.active:
            raise _invalid_grant("the person who approved this is no longer active")
        scope = DeviceScope(
            workspace_id=row.workspace_id,
            read_only=bool(row.read_only),
            expires_at=now + ACCESS_TTL,
            client_id=client.client_id,
        )
        device_id, access = await self._identity.new_device(row.user_id, f"{client.client_name} (OAuth)", scope=scope)
        async with self._db.begin() as conn:
            await conn.execute(
                sa.insert(t.grants).values(
                    id=grant_id,
                    client_id=client.client_id,
                    user_id=row.user_id,
                    device_id=device_id,
                    workspace_id=row.workspace_id,
                    read_only=bool(row.read_only),
                    created_at=now,
                )
            )
            reused = (await conn.execute(sa.select(t.codes.c.reused_at).where(t.codes.c.code_hash == key))).scalar()
        if reused is not None:  # presented again while this exchange ran
            await self._revoke(grant_id, "oauth.codeReused")
            raise _invalid_grant("the authorization code was already used; what it gave is revoked")
        refresh = await self._new_refresh(grant_id) if "refresh_token" in client.grant_types else None
        return Tokens(access, int(ACCESS_TTL.total_seconds()), refresh)

    # -- refresh -------------------------------------------------------------------------------------------

    async def _new_refresh(self, grant_id: str) -> str:
        token = "hor_" + secrets.token_urlsafe(32)
        now = self._clock.now()
        async with self._db.begin() as conn:
            await conn.execute(sa.delete(t.refresh_tokens).where(t.refresh_tokens.c.expires_at <= now - REFRESH_TTL))
            await conn.execute(
                sa.insert(t.refresh_tokens).values(
                    token_hash=token_hash(token), grant_id=grant_id, created_at=now, expires_at=now + REFRESH_TTL
                )
            )
        return token

    async def refresh(self, client: Client, token: str) -> Tokens:
        """Rotate: a new access token on the same credential and a new refresh token; a used one revokes all."""
        if "refresh_token" not in client.grant_types:
            raise OAuthError("unauthorized_client", "this client was not registered for the refresh_token grant")
        now = self._clock.now()
        key = token_hash(token)
        rt, g = t.refresh_tokens, t.grants
        async with write_transaction(self._db) as conn:
            row = (
                await conn.execute(
                    sa.select(rt, g.c.client_id, g.c.revoked_at.label("grant_revoked_at"), g.c.device_id)
                    .join(g, g.c.id == rt.c.grant_id)
                    .where(rt.c.token_hash == key)
                )
            ).first()
            if row is not None and row.used_at is None and row.client_id == client.client_id:
                await conn.execute(sa.update(rt).where(rt.c.token_hash == key).values(used_at=now))
        if row is None or row.client_id != client.client_id:
            raise _invalid_grant("the refresh token is unknown")
        if row.used_at is not None:
            await self._revoke(row.grant_id, "oauth.refreshReused")
            log.warning("OAuth: a used refresh token of client %s was presented again", client.client_id)
            raise _invalid_grant("the refresh token was already used; the grant is revoked, sign in again")
        if row.grant_revoked_at is not None:
            raise _invalid_grant("the grant was revoked; sign in again")
        if row.expires_at <= now:
            raise _invalid_grant("the refresh token has expired; sign in again")
        try:
            access = await self._identity.rotate_device_token(row.device_id, expires_at=now + ACCESS_TTL)
        except (NotFound, Unauthenticated) as exc:
            # Revoked with devices.revoke, or past what the session policy allows: the grant ends here.
            await self._revoke(row.grant_id, "oauth.revoked", {"why": exc.message})
            raise _invalid_grant(f"the grant has ended: {exc.message}; sign in again") from None
        return Tokens(access, int(ACCESS_TTL.total_seconds()), await self._new_refresh(row.grant_id))

    # -- revocation ----------------------------------------------------------------------------------------

    async def revoke_token(self, client: Client, token: str) -> None:
        """RFC 7009: end the grant a refresh or access token of ``client`` belongs to; anything else is ignored."""
        async with self._db.connect() as conn:
            grant_id = (
                await conn.execute(
                    sa.select(t.grants.c.id)
                    .join(t.refresh_tokens, t.refresh_tokens.c.grant_id == t.grants.c.id)
                    .where(t.refresh_tokens.c.token_hash == token_hash(token), t.grants.c.client_id == client.client_id)
                )
            ).scalar()
        if grant_id is None:
            device = await self._identity.device_of_token(token)
            if device is None or device.scope.client_id != client.client_id:
                return
            async with self._db.connect() as conn:
                grant_id = (
                    await conn.execute(sa.select(t.grants.c.id).where(t.grants.c.device_id == device.id))
                ).scalar()
            if grant_id is None:
                return
        await self._revoke(grant_id, "oauth.revoked", {"why": "the client revoked it"})

    async def _revoke(self, grant_id: str, action: str, details: dict[str, Any] | None = None) -> None:
        """End a grant and its credential (idempotent); audited when it ended something."""
        async with self._db.begin() as conn:
            row = (
                await conn.execute(
                    sa.update(t.grants)
                    .where(t.grants.c.id == grant_id, t.grants.c.revoked_at.is_(None))
                    .values(revoked_at=self._clock.now())
                    .returning(
                        t.grants.c.id,
                        t.grants.c.client_id,
                        t.grants.c.user_id,
                        t.grants.c.device_id,
                        t.grants.c.workspace_id,
                    )
                )
            ).first()
        if row is None:
            return
        grant = GrantRow(row.id, row.client_id, row.user_id, row.device_id, row.workspace_id)
        await self._identity.revoke_device_id(grant.device_id)
        await self.audit(
            grant.user_id, grant.workspace_id, action, grant.client_id, {"deviceId": grant.device_id, **(details or {})}
        )

    # -- audit ---------------------------------------------------------------------------------------------

    async def audit(
        self, user_id: str, workspace_id: str | None, action: str, client_id: str, details: dict[str, Any]
    ) -> None:
        """One audit row per workspace the grant reaches (the server has no audit log of its own)."""
        if workspace_id is not None:
            targets = [workspace_id]
        else:
            targets = [ws.id for ws, _role in await self._identity.workspaces_of(user_id)]
        for ws in targets:
            try:
                await self._app.audit.append(
                    ws, principal=f"user:{user_id}", action=action, target=f"oauth-client:{client_id}", details=details
                )
            except HangarError as exc:  # a damaged workspace database must not keep the grant alive
                log.warning("OAuth: audit row %s for workspace %s not written: %s", action, ws, exc.message)
