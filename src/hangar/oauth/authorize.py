"""The authorization endpoint and the pages behind it: sign in (pairing code or SSO), then consent.

``GET /auth/oauth/authorize`` checks the request, and every problem it finds is shown on a page, never
redirected: an unknown client or redirect URI, a response type other than ``code``, a missing PKCE challenge or a
method other than ``S256``, a ``resource`` (RFC 8707) other than ``/mcp``. Anyone may register a client with any
redirect URI and send anyone's browser to this endpoint, so an error redirect from here (RFC 6749 section 4.1.2.1
allows one once the redirect URI is checked) would make this server a redirector to whatever site registered;
whether some person approved that client once says nothing about the browser at hand. Errors go back to the
client only from within a request this browser started and signed in to: the person's own "Deny" at consent. A
good request is stored, bound to this browser (``hangar.oauth.browser``), and answered with the sign-in page.

Sign-in: ``POST /auth/oauth/pair`` with a device pairing code (``devices.pairingCode``), or
``GET /auth/oauth/sso`` which starts the SSO login with ``relay=oauth`` and this request as its continuation;
the login comes back to ``GET /auth/oauth/sso-return`` with a one-time hand-off (``hangar.sso.continuation``).
Either way the person is bound to the request on the server, and the browser goes to the consent page
(``GET /auth/oauth/consent``). ``POST /auth/oauth/decide`` takes the request out (decided once) and answers
303 to the redirect URI with ``code``, ``state`` and ``iss`` (RFC 9207), or ``error=access_denied``.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from hangar.core.context import AppContext
from hangar.errors import HangarError
from hangar.identity import IdentityService, Pairing, User
from hangar.oauth.browser import NotThisBrowser, bind, binding_of, check_form, csrf_token, forget
from hangar.oauth.clients import Client, Clients
from hangar.oauth.forms import BadForm, read_form
from hangar.oauth.grants import Grants
from hangar.oauth.metadata import is_our_resource, resource_url
from hangar.oauth.pages import CONSENT_PATH, Asking, WorkspaceChoice, consent_page, error_page, sign_in_page
from hangar.oauth.requests import AuthRequest, PendingRequests
from hangar.sso import OAUTH_RELAY, SignInHandoffs, sign_in_providers

log = logging.getLogger(__name__)

CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")  # BASE64URL(SHA-256(verifier)), RFC 7636 section 4.2
MAX_STATE = 2000
_NO_STORE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


class PageFailure(Exception):
    """Stop here and show this page."""

    def __init__(self, response: Response) -> None:
        super().__init__("page failure")
        self.response = response


Handler = Callable[[Request], Awaitable[Response]]


def page_route(handler: Handler) -> Handler:
    @functools.wraps(handler)
    async def handle(request: Request) -> Response:
        try:
            return await handler(request)
        except PageFailure as failure:
            return failure.response
        except BadForm as exc:
            return error_page("Sign-in refused", str(exc))
        except NotThisBrowser as exc:
            return error_page("Sign-in refused", str(exc), status=403)

    return handle


def _ctx(request: Request) -> AppContext:
    ctx: AppContext = request.app.state.ctx
    return ctx


def with_params(uri: str, params: dict[str, str | None]) -> str:
    """``uri`` with ``params`` added to its query (a registered URI may carry a query of its own)."""
    query = urlencode({k: v for k, v in params.items() if v is not None})
    if not urlsplit(uri).query:
        return f"{uri}?{query}"
    return f"{uri}{'' if uri.endswith('&') else '&'}{query}"


def _redirect(location: str) -> RedirectResponse:
    return RedirectResponse(location, status_code=303, headers=_NO_STORE)


def _asking(client: Client, auth: AuthRequest, binding: str) -> Asking:
    return Asking(client.client_name, auth.redirect_uri, auth.id, csrf_token(binding, auth))


async def _sign_in(
    ctx: AppContext, client: Client, auth: AuthRequest, binding: str, *, error: str | None = None, status: int = 200
) -> Response:
    return sign_in_page(
        _asking(client, auth, binding),
        providers=await sign_in_providers(ctx),
        pairing=await ctx.service(IdentityService).pairing_enabled(),
        error=error,
        status=status,
    )


async def _consent(
    ctx: AppContext, client: Client, auth: AuthRequest, binding: str, *, error: str | None = None, status: int = 200
) -> Response:
    identity = ctx.service(IdentityService)
    assert auth.user_id is not None
    user = await _active(ctx, auth.user_id)
    person = user.display_name + (f" ({user.email})" if user.email else "")
    workspaces = [WorkspaceChoice(ws.id, ws.name, role.name) for ws, role in await identity.workspaces_of(user.id)]
    return consent_page(
        _asking(client, auth, binding),
        person=person,
        workspaces=workspaces,
        server_owner=await identity.is_server_owner(user.id),
        error=error,
        status=status,
    )


async def _active(ctx: AppContext, user_id: str) -> User:
    user = await ctx.service(IdentityService).get_user(user_id)
    if user is None or not user.active:
        raise PageFailure(error_page("Sign-in refused", "this account is deactivated", status=403))
    return user


async def _held(request: Request, request_id: str | None) -> tuple[AuthRequest, Client, str]:
    """The live request ``request_id`` names, its client, and the binding this browser holds for it."""
    ctx = _ctx(request)
    auth = await ctx.service(PendingRequests).get(request_id)
    if auth is None:
        raise PageFailure(
            error_page("This sign-in has ended", "it expired, was already decided, or never existed", status=400)
        )
    client = await ctx.service(Clients).get(auth.client_id)
    if client is None:
        raise PageFailure(error_page("Unknown application", "the application is no longer registered"))
    return auth, client, binding_of(request, auth)


# -- the authorization endpoint --------------------------------------------------------------------------------


async def authorize(request: Request) -> Response:
    """The authorization endpoint: check the request, then show the sign-in page (RFC 6749, PKCE S256)."""
    ctx = _ctx(request)
    q = request.query_params
    for name in ("client_id", "redirect_uri"):
        if len(q.getlist(name)) > 1:
            return error_page("Invalid request", f"{name} is given more than once")
    client = await ctx.service(Clients).get(q.get("client_id"))
    if client is None:
        return error_page("Unknown application", "client_id does not name an application registered on this server")
    redirect_uri = q.get("redirect_uri")
    if redirect_uri is None:
        if len(client.redirect_uris) != 1:
            return error_page("Invalid request", "redirect_uri is required: this application registered several")
        redirect_uri = client.redirect_uris[0]
    elif redirect_uri not in client.redirect_uris:
        return error_page(
            "Unknown redirect", "redirect_uri is not one this application registered, so nothing is sent there"
        )
    # The redirect URI is the client's own from here on, but nothing is redirected to it until this browser has
    # started a request and signed in to it (see the module's docstring): a problem is shown here.
    state = q.get("state")

    def fail(error: str, description: str) -> Response:
        return error_page("Invalid request", f"{error}: {description}")

    repeated = sorted(name for name in set(q.keys()) if len(q.getlist(name)) > 1)
    if repeated:
        return fail("invalid_request", f"{repeated[0]} is given more than once")
    if state is not None and len(state) > MAX_STATE:
        return fail("invalid_request", f"state is longer than {MAX_STATE} characters")
    if q.get("response_type") != "code":
        return fail("unsupported_response_type", "response_type must be code")
    challenge = q.get("code_challenge")
    if not challenge:
        return fail("invalid_request", "code_challenge is required (PKCE with S256)")
    if q.get("code_challenge_method") != "S256":
        return fail("invalid_request", "code_challenge_method must be S256 (plain is not accepted)")
    if not CHALLENGE.fullmatch(challenge):
        return fail("invalid_request", "code_challenge must be the base64url SHA-256 of the verifier (43 characters)")
    resource = q.get("resource")
    if resource is not None and not is_our_resource(resource, ctx.settings):
        return fail("invalid_target", f"resource must be {resource_url(ctx.settings)}")
    auth, binding = await ctx.service(PendingRequests).open(
        client_id=client.client_id,
        redirect_uri=redirect_uri,
        state=state,
        code_challenge=challenge,
        resource=resource_url(ctx.settings),
    )
    response = await _sign_in(ctx, client, auth, binding)
    bind(response, auth, binding, secure=ctx.settings.origin.startswith("https://"))
    return response


# -- signing in --------------------------------------------------------------------------------------------------


def _to_consent(auth: AuthRequest) -> Response:
    return _redirect(f"{CONSENT_PATH}?{urlencode({'request': auth.id})}")


async def pair(request: Request) -> Response:
    """Sign in to a pending authorization request with a device pairing code."""
    ctx = _ctx(request)
    form = await read_form(request)
    auth, client, binding = await _held(request, form.get("request"))
    check_form(request, auth, form.get("csrf"))
    try:
        user_id = await ctx.service(Pairing).sign_in(form.get("code", ""))
    except HangarError as exc:
        return await _sign_in(ctx, client, auth, binding, error=exc.message, status=400)
    await _active(ctx, user_id)
    await ctx.service(PendingRequests).sign_in(auth.id, user_id, "pairing")
    return _to_consent(auth)


async def sso_start(request: Request) -> Response:
    """Start the SSO login for a pending authorization request (a link: the login leaves this origin)."""
    ctx = _ctx(request)
    auth, client, binding = await _held(request, request.query_params.get("request"))
    wanted = request.query_params.get("provider")
    provider = next((p for p in await sign_in_providers(ctx) if p.id == wanted), None)
    if provider is None:
        return await _sign_in(ctx, client, auth, binding, error="that sign-in is not offered here", status=400)
    return _redirect(f"{provider.login_path}?{urlencode({'relay': OAUTH_RELAY, 'continuation': auth.id})}")


async def sso_return(request: Request) -> Response:
    """Where an SSO login started from the sign-in page comes back (a one-time server-side hand-off)."""
    ctx = _ctx(request)
    handoff = await ctx.service(SignInHandoffs).take(request.query_params.get("handoff", ""))
    if handoff is None:
        return error_page("Sign-in expired", "the single sign-on hand-off is unknown, used or expired")
    auth, _client, _binding = await _held(request, handoff.continuation)
    await _active(ctx, handoff.user_id)
    await ctx.service(PendingRequests).sign_in(auth.id, handoff.user_id, "sso")
    return _to_consent(auth)


# -- consent -----------------------------------------------------------------------------------------------------


async def consent(request: Request) -> Response:
    """The consent page of a signed-in authorization request."""
    ctx = _ctx(request)
    auth, client, binding = await _held(request, request.query_params.get("request"))
    if auth.user_id is None:
        return await _sign_in(ctx, client, auth, binding)
    return await _consent(ctx, client, auth, binding)


async def decide(request: Request) -> Response:
    """Allow or deny: redirect to the client with a code (or access_denied), state and iss."""
    ctx = _ctx(request)
    form = await read_form(request)
    auth, client, binding = await _held(request, form.get("request"))
    check_form(request, auth, form.get("csrf"))
    if auth.user_id is None:
        return await _sign_in(ctx, client, auth, binding, error="sign in first", status=400)
    decision = form.get("decision")
    if decision not in ("approve", "deny"):
        return await _consent(ctx, client, auth, binding, error="choose Allow or Deny", status=400)
    workspace_id: str | None = None
    read_only = True
    if decision == "approve":
        chosen = form.get("workspace", "")
        mine = {ws.id for ws, _role in await ctx.service(IdentityService).workspaces_of(auth.user_id)}
        if chosen != "*" and chosen not in mine:
            return await _consent(ctx, client, auth, binding, error="choose one of your workspaces", status=400)
        access = form.get("access")
        if access not in ("read", "write"):
            return await _consent(ctx, client, auth, binding, error="choose read only or read and change", status=400)
        workspace_id = None if chosen == "*" else chosen
        read_only = access == "read"
    taken = await ctx.service(PendingRequests).take(auth.id)
    if taken is None:
        raise PageFailure(error_page("This sign-in has ended", "it was already decided or has expired"))
    iss = ctx.settings.origin
    if decision == "deny":
        params = {"error": "access_denied", "error_description": "the person denied access", "state": taken.state}
        response = _redirect(with_params(taken.redirect_uri, {**params, "iss": iss}))
        forget(response, taken)
        return response
    assert taken.user_id is not None
    grants = ctx.service(Grants)
    code = await grants.mint_code(taken, user_id=taken.user_id, workspace_id=workspace_id, read_only=read_only)
    await ctx.service(Clients).authorized(client.client_id)
    details = {
        "clientName": client.client_name,
        "redirectUri": taken.redirect_uri,
        "workspace": workspace_id or "all",
        "readOnly": read_only,
        "signedInWith": taken.signed_in_with,
    }
    await grants.audit(taken.user_id, workspace_id, "oauth.authorized", client.client_id, details)
    log.info("OAuth: user %s authorized client %s", taken.user_id, client.client_id)
    response = _redirect(with_params(taken.redirect_uri, {"code": code, "state": taken.state, "iss": iss}))
    forget(response, taken)
    return response
