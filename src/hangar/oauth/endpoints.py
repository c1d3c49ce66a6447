"""The authorization server's JSON endpoints: registration (RFC 7591), token (RFC 6749 with PKCE, RFC 7636) and
revocation (RFC 7009).

Client authentication at the token and revocation endpoints: a public client names itself with ``client_id``;
a confidential one also proves its secret, with HTTP Basic (``client_secret_basic``, id and secret
form-urlencoded first as RFC 6749 section 2.3.1 says) or in the form (``client_secret_post``). A failure is
``401 invalid_client``. ``resource`` (RFC 8707), when a token request carries it, must be ``/mcp``.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from urllib.parse import unquote_plus

from starlette.requests import Request
from starlette.responses import Response

from hangar.core import wire
from hangar.core.context import AppContext
from hangar.core.ids import token_hash
from hangar.errors import InvalidArgs
from hangar.httpkit.requests import BodyTooLarge, read_body
from hangar.oauth.clients import Client, Clients, read_metadata
from hangar.oauth.errors import OAuthError, error_answer, json_answer, preflight
from hangar.oauth.forms import BadForm, read_form
from hangar.oauth.grants import Grants
from hangar.oauth.metadata import is_our_resource, resource_url

MAX_REGISTRATION_BYTES = 16 * 1024


def _ctx(request: Request) -> AppContext:
    ctx: AppContext = request.app.state.ctx
    return ctx


# -- registration ----------------------------------------------------------------------------------------------


async def register(request: Request) -> Response:
    """Dynamic client registration (RFC 7591)."""
    if request.method == "OPTIONS":
        return preflight("POST, OPTIONS")
    try:
        body = await read_body(request, MAX_REGISTRATION_BYTES)
        try:
            data = wire.loads(body or b"null", field="body")
        except InvalidArgs:
            raise OAuthError("invalid_client_metadata", "body: the registration must be a JSON object") from None
        meta = read_metadata(data)
    except BodyTooLarge:
        return error_answer(
            OAuthError("invalid_client_metadata", f"body: larger than {MAX_REGISTRATION_BYTES} bytes", status=413)
        )
    except OAuthError as err:
        return error_answer(err)
    client, secret = await _ctx(request).service(Clients).register(meta)
    answer = client.wire()
    if secret is not None:
        answer |= {"client_secret": secret, "client_secret_expires_at": 0}
    return json_answer(answer, status=201)


# -- client authentication -------------------------------------------------------------------------------------


def _basic(request: Request) -> tuple[str, str] | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        client_id, sep, secret = base64.b64decode(value.strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        raise _bad_client("the Basic credentials cannot be read", basic=True) from None
    if not sep:
        raise _bad_client("the Basic credentials cannot be read", basic=True)
    return unquote_plus(client_id), unquote_plus(secret)


def _bad_client(description: str, *, basic: bool = False) -> OAuthError:
    headers = {"WWW-Authenticate": 'Basic realm="hangar"'} if basic else None
    return OAuthError("invalid_client", description, status=401, headers=headers)


async def authenticate_client(request: Request, form: dict[str, str]) -> Client:
    basic = _basic(request)
    if basic is not None and "client_secret" in form:
        raise OAuthError("invalid_request", "use one way to authenticate the client, not both")
    secret: str | None
    if basic is not None:
        client_id, secret = basic
        if form.get("client_id", client_id) != client_id:
            raise OAuthError("invalid_request", "client_id differs from the Basic credentials")
    else:
        client_id, secret = form.get("client_id", ""), form.get("client_secret")
    if not client_id:
        raise _bad_client("client_id is required")
    client = await _ctx(request).service(Clients).get(client_id)
    if client is None:
        raise _bad_client("the client is unknown", basic=basic is not None)
    if not client.public:
        if not secret or client.secret_hash is None:
            raise _bad_client("this client must authenticate with its secret", basic=basic is not None)
        if not secrets.compare_digest(token_hash(secret), client.secret_hash):
            raise _bad_client("the client secret is wrong", basic=basic is not None)
    return client


# -- token -----------------------------------------------------------------------------------------------------


async def _client_and_form(request: Request) -> tuple[Client, dict[str, str]]:
    """The form-encoded body of a client's request and the client it authenticates (token, revocation)."""
    try:
        form = await read_form(request)
    except BadForm as exc:
        raise OAuthError("invalid_request", str(exc)) from None
    return await authenticate_client(request, form), form


async def token(request: Request) -> Response:
    """The token endpoint: authorization_code (with PKCE) and refresh_token grants."""
    if request.method == "OPTIONS":
        return preflight("POST, OPTIONS")
    ctx = _ctx(request)
    try:
        client, form = await _client_and_form(request)
        resource = form.get("resource")
        if resource is not None and not is_our_resource(resource, ctx.settings):
            raise OAuthError("invalid_target", f"resource must be {resource_url(ctx.settings)}")
        grants = ctx.service(Grants)
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            code = form.get("code")
            if not code:
                raise OAuthError("invalid_request", "code is required")
            issued = await grants.redeem(
                client, code, redirect_uri=form.get("redirect_uri"), verifier=form.get("code_verifier")
            )
        elif grant_type == "refresh_token":
            refresh = form.get("refresh_token")
            if not refresh:
                raise OAuthError("invalid_request", "refresh_token is required")
            issued = await grants.refresh(client, refresh)
        elif grant_type is None:
            raise OAuthError("invalid_request", "grant_type is required")
        else:
            raise OAuthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
    except OAuthError as err:
        return error_answer(err)
    return json_answer(issued.wire())


async def revoke(request: Request) -> Response:
    """Token revocation (RFC 7009): ends the grant a token belongs to."""
    if request.method == "OPTIONS":
        return preflight("POST, OPTIONS")
    try:
        client, form = await _client_and_form(request)
        presented = form.get("token")
        if not presented:
            raise OAuthError("invalid_request", "token is required")
    except OAuthError as err:
        return error_answer(err)
    await _ctx(request).service(Grants).revoke_token(client, presented)
    # RFC 7009 section 2.2: the same answer whether or not the token was known.
    return json_answer({})
