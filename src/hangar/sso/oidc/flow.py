"""The OIDC relying party: authorization code flow with PKCE (S256), ``state`` and ``nonce``, via authlib.

``/oidc/login`` discovers the provider, remembers a pending login under a fresh ``state`` (with the PKCE
verifier, the nonce, the redirect URI and the client's relay; in the server database, so a restart in
between loses nothing: ``hangar.sso.oidc.pending``), binds it to this browser with an HttpOnly
cookie whose name derives from the state, and redirects to the authorization endpoint asking for the
connection's ``scopes``. ``/oidc/callback`` takes the pending login out (each state works once, and only in the
browser holding the cookie), exchanges the code (with the client secret from the secrets file when one is
saved), verifies the ID token, reads the userinfo endpoint for claims the token left out, and hands the result
to the shared login outcome.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from hangar.core.context import AppContext
from hangar.errors import InvalidArgs
from hangar.httpkit.tls import client_tls
from hangar.sso.config import OidcConnection, SsoConfigStore, SsoKind
from hangar.sso.continuation import signed_in
from hangar.sso.endpoints import OIDC_CALLBACK_PATH, oidc_redirect_uri, sso_origin
from hangar.sso.errors import SsoError
from hangar.sso.handoff import LoginIntent, failure_response
from hangar.sso.login import SsoIdentity
from hangar.sso.oidc.discovery import HTTP_TIMEOUT, ProviderKeys, ProviderMetadata, discover
from hangar.sso.oidc.pending import PENDING_TTL_SECONDS, PendingLogin, PendingLogins
from hangar.sso.oidc.tokens import verify_id_token
from hangar.sso.state import StateDb

log = logging.getLogger(__name__)

METADATA_TTL_SECONDS = 3600
CALLBACK_PATH = OIDC_CALLBACK_PATH


def binding_cookie(state: str) -> str:
    return "hangar_oidc_" + hashlib.sha256(state.encode()).hexdigest()[:16]


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


class OidcService:
    def __init__(
        self, ctx: AppContext, store: SsoConfigStore, db: StateDb, http: httpx.AsyncClient | None = None
    ) -> None:
        self._ctx = ctx
        self._store = store
        # Made on first use (``_client``): the shared TLS context loads the CA bundle, and most servers never see an
        # OIDC sign-in, so the start does not pay for it.
        self._http_given = http
        self._http_made: httpx.AsyncClient | None = None
        self.pending = PendingLogins(ctx.clock, db)
        self._providers: dict[str, tuple[ProviderMetadata, ProviderKeys, float]] = {}
        store.on_change(self._on_config_change)

    def _on_config_change(self, kind: SsoKind, _record: object) -> None:
        if kind == "oidc":
            self._providers.clear()

    @property
    def _http(self) -> httpx.AsyncClient:
        if self._http_given is not None:
            return self._http_given
        if self._http_made is None:
            self._http_made = httpx.AsyncClient(timeout=HTTP_TIMEOUT, follow_redirects=False, verify=client_tls())
        return self._http_made

    async def aclose(self) -> None:
        if self._http_given is not None:
            await self._http_given.aclose()
        if self._http_made is not None:
            await self._http_made.aclose()

    async def provider(self, issuer: str) -> tuple[ProviderMetadata, ProviderKeys]:
        """Discovered metadata and keys for ``issuer``, cached for an hour and dropped when the config changes."""
        now = self._ctx.clock.monotonic()
        cached = self._providers.get(issuer)
        if cached is not None and now - cached[2] < METADATA_TTL_SECONDS:
            return cached[0], cached[1]
        meta = await discover(self._http, issuer)
        keys = ProviderKeys(self._http, meta.jwks_uri)
        self._providers[issuer] = (meta, keys, now)
        return meta, keys

    async def discover_fresh(self, issuer: str) -> tuple[ProviderMetadata, ProviderKeys]:
        """Discovery that bypasses and leaves alone the cache (for testing unsaved values)."""
        meta = await discover(self._http, issuer)
        return meta, ProviderKeys(self._http, meta.jwks_uri)

    def callback_url(self, request: Request) -> str:
        """The redirect URI: built from the SSO origin, as the settings page shows it (``hangar.sso.endpoints``)."""
        return oidc_redirect_uri(sso_origin(self._ctx.settings, request))

    async def _enabled(self) -> OidcConnection:
        conn = (await self._store.fresh()).oidc
        if not conn.enabled or not conn.issuer or not conn.clientId:
            raise SsoError("invalid", "OIDC sign-in is not enabled on this server")
        return conn

    async def take_pending(self, state: str | None) -> PendingLogin:
        """The pending login for ``state``, removed (single use); ``state`` failure when unknown or stale."""
        # The store blocks on the server database: off the loop (see ``hangar.sso.state``), in this process's turn
        # to write it (``Databases.server_writes``).
        pending = None
        if state:
            async with self._ctx.dbs.server_writes:
                pending = await asyncio.to_thread(self.pending.take, state)
        if pending is None:
            raise SsoError("state", "this sign-in is unknown, already used or expired; start again")
        if self._ctx.clock.now() >= pending.expires_at:
            raise SsoError("state", "this sign-in took too long; start again")
        return pending

    async def begin(self, request: Request) -> Response:
        # authlib is imported by the sign-ins that use it, not at every server start.
        from authlib.common.security import generate_token
        from authlib.integrations.httpx_client import AsyncOAuth2Client

        conn = await self._enabled()
        try:
            intent = LoginIntent.from_request(request)
        except InvalidArgs as exc:
            raise SsoError("invalid", exc.message) from None
        assert conn.issuer is not None and conn.clientId is not None
        meta, _keys = await self.provider(conn.issuer)
        state = secrets.token_urlsafe(32)
        nonce = secrets.token_urlsafe(32)
        verifier = generate_token(64)
        binding = secrets.token_urlsafe(32)
        redirect_uri = self.callback_url(request)
        client = AsyncOAuth2Client(
            client_id=conn.clientId,
            scope=conn.scopes,
            redirect_uri=redirect_uri,
            code_challenge_method="S256",
            verify=client_tls(),
        )
        try:
            url, _ = client.create_authorization_url(
                meta.authorization_endpoint, state=state, code_verifier=verifier, nonce=nonce
            )
        finally:
            await client.aclose()
        login = self.pending.new(
            nonce=nonce,
            code_verifier=verifier,
            redirect_uri=redirect_uri,
            intent=intent,
            binding_hash=_digest(binding),
            issuer=conn.issuer,
            client_id=conn.clientId,
        )
        async with self._ctx.dbs.server_writes:
            await asyncio.to_thread(self.pending.add, state, login)
        resp = RedirectResponse(url, status_code=302, headers={"Cache-Control": "no-store"})
        resp.set_cookie(
            binding_cookie(state),
            binding,
            max_age=PENDING_TTL_SECONDS,
            path=CALLBACK_PATH,
            httponly=True,
            secure=redirect_uri.startswith("https://"),
            samesite="lax",
        )
        return resp

    async def finish(self, request: Request) -> Response:
        params = request.query_params
        state = params.get("state")
        try:
            pending = await self.take_pending(state)
            assert state is not None
            presented = request.cookies.get(binding_cookie(state), "")
            if not presented or not secrets.compare_digest(_digest(presented), pending.binding_hash):
                raise SsoError(
                    "state",
                    "this sign-in was started in another browser, or at another address of this server than "
                    f"{sso_origin(self._ctx.settings, request)}; start again there",
                )
            response = await self._complete(request, pending)
        except SsoError as exc:
            response = failure_response(request, exc)
        if state:
            response.delete_cookie(binding_cookie(state), path=CALLBACK_PATH)
        return response

    async def _complete(self, request: Request, pending: PendingLogin) -> Response:
        params = request.query_params
        if params.get("error"):
            detail = params.get("error_description") or params.get("error")
            raise SsoError("invalid", f"the identity provider refused the sign-in: {detail}"[:300])
        code = params.get("code")
        if not code:
            raise SsoError("invalid", "the identity provider sent no authorization code")
        conn = await self._enabled()
        if (conn.issuer, conn.clientId) != (pending.issuer, pending.client_id):
            raise SsoError("invalid", "the OIDC connection changed during this sign-in; start again")
        meta, keys = await self.provider(pending.issuer)
        # RFC 9207 (a defence against mix-up attacks when several providers are in play): a provider that names
        # itself in the response must be the one this sign-in went to, and one that says it always does must have.
        returned_iss = params.get("iss")
        if returned_iss is None and meta.sends_iss:
            raise SsoError("issuer", "the authorization response does not name its issuer, which this provider does")
        if returned_iss is not None and returned_iss != pending.issuer:
            raise SsoError("issuer", "the authorization response comes from another issuer")
        token = await self._exchange(meta, pending, code)
        id_token = token.get("id_token")
        if not isinstance(id_token, str):
            raise SsoError("invalid", "the token response carries no ID token")
        claims = await verify_id_token(
            id_token,
            keys=keys,
            issuer=meta.issuer,
            client_id=pending.client_id,
            nonce=pending.nonce,
            now=self._ctx.clock.now(),
            allowed_algs=meta.id_token_algs,
        )
        access_token = token.get("access_token")
        if meta.userinfo_endpoint and isinstance(access_token, str):
            claims = {**await self._userinfo(meta.userinfo_endpoint, access_token, claims["sub"]), **claims}
        who = SsoIdentity(
            issuer=meta.issuer,
            subject=claims["sub"],
            email=_str(claims.get("email")),
            display_name=_str(claims.get("name")) or _str(claims.get("preferred_username")),
            groups=_groups(claims.get(conn.groupsClaim)),
            email_verified=claims.get("email_verified") if isinstance(claims.get("email_verified"), bool) else None,
        )
        agent = request.headers.get("user-agent", "browser")[:80]
        return await signed_in(
            self._ctx, conn, who, kind="oidc", device_name=f"OIDC sign-in · {agent}", intent=pending.intent
        )

    async def _exchange(self, meta: ProviderMetadata, pending: PendingLogin, code: str) -> dict[str, Any]:
        from authlib.integrations.base_client.errors import OAuthError
        from authlib.integrations.httpx_client import AsyncOAuth2Client

        secret = self._store.client_secret()
        if secret is None:
            method = "none"
        elif "client_secret_basic" in meta.token_auth_methods:
            method = "client_secret_basic"
        else:
            method = "client_secret_post"
        client = AsyncOAuth2Client(
            client_id=pending.client_id,
            client_secret=secret,
            token_endpoint_auth_method=method,
            redirect_uri=pending.redirect_uri,
            timeout=HTTP_TIMEOUT,
            verify=client_tls(),
        )
        try:
            token = await client.fetch_token(
                meta.token_endpoint,
                grant_type="authorization_code",
                code=code,
                code_verifier=pending.code_verifier,
            )
        except OAuthError as exc:
            raise SsoError("invalid", f"the token endpoint refused the code: {exc.error}") from None
        except httpx.HTTPError as exc:
            raise SsoError("internal", f"the token endpoint could not be reached: {type(exc).__name__}") from None
        except ValueError:
            raise SsoError("invalid", "the token endpoint's answer cannot be read") from None
        finally:
            await client.aclose()
        return dict(token)

    async def _userinfo(self, url: str, access_token: str, subject: str) -> dict[str, Any]:
        try:
            resp = await self._http.get(url, headers={"authorization": f"Bearer {access_token}"})
        except httpx.HTTPError:
            return {}
        if resp.status_code != 200:
            return {}
        try:
            info = resp.json()
        except ValueError:
            return {}
        if not isinstance(info, dict):
            return {}
        # OpenID Connect Core §5.3.2: userinfo for another subject must not be used.
        if info.get("sub") != subject:
            raise SsoError("invalid", "the userinfo endpoint describes another user")
        return info


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _groups(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(g for g in value if isinstance(g, str))
    return ()
