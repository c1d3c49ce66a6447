"""The SAML HTTP routes: ``GET /saml/login``, ``POST /saml/acs``, ``GET /saml/metadata`` (``SAML_ROUTES``).

``/saml/login`` answers 302 to the IdP (HTTP-Redirect binding) and remembers the request with its relay and
the ``client_origin`` the allow-list trusts. ``/saml/acs`` reads the form post under a size bound, verifies
the response (``ResponseVerifier``), hands the identity to the shared login outcome and answers with the
credential hand-off of CONTRACTS section 4; a failure answers 400 with the SAML code, and nothing is
provisioned. ``/saml/metadata`` is our entity descriptor for the IdP's administrator.
"""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from hangar.core.context import AppContext
from hangar.errors import HangarError, InvalidArgs
from hangar.httpkit.ratelimit import failures_limited, rate_limited
from hangar.httpkit.requests import BodyTooLarge, read_body
from hangar.sso.config import SamlConnection, SsoConfigStore
from hangar.sso.continuation import signed_in
from hangar.sso.endpoints import sso_origin
from hangar.sso.errors import SsoError
from hangar.sso.handoff import LoginIntent, failure_response
from hangar.sso.login import SsoIdentity
from hangar.sso.saml.service import ACS_PATH, LOGIN_PATH, METADATA_PATH, saml_service

log = logging.getLogger(__name__)

MAX_FORM_BYTES = 1024 * 1024
DEVICE_NAME = "SAML sign-in"
_NO_STORE = {"Cache-Control": "no-store"}


def _ctx(request: Request) -> AppContext:
    ctx: AppContext = request.app.state.ctx
    return ctx


def _origin(request: Request) -> str:
    """Our origin as the IdP knows it (``hangar.sso.endpoints``: the public URL, else the listener)."""
    return sso_origin(_ctx(request).settings, request)


async def _connection(request: Request) -> SamlConnection:
    return (await _ctx(request).service(SsoConfigStore).fresh()).saml


async def _enabled_connection(request: Request) -> SamlConnection:
    conn = await _connection(request)
    if not conn.enabled:
        raise SsoError("invalid", "SAML sign-in is not enabled on this server")
    return conn


async def saml_login(request: Request) -> Response:
    try:
        conn = await _enabled_connection(request)
        try:
            intent = LoginIntent.from_request(request)
        except InvalidArgs as exc:
            raise SsoError("invalid", exc.message) from None
        ctx = _ctx(request)
        service = saml_service(ctx)
        authn = service.new_request(conn, _origin(request))  # a small document: built on the loop
        # Off the loop: the pending request is written to the server database, which may have to wait for
        # another writer, and that writer may itself be waiting for the loop (``hangar.sso.state``). In this
        # process's turn to write it (``Databases.server_writes``), which covers the write alone.
        async with ctx.dbs.server_writes:
            await asyncio.to_thread(
                service.pending.add,
                authn.id,
                relay=intent.relay,
                client_origin=intent.client_origin,
                continuation=intent.continuation,
                client_state=intent.client_state,
            )
    except SsoError as exc:
        return failure_response(request, exc)
    return RedirectResponse(authn.redirect_url, status_code=302, headers=_NO_STORE)


async def _read_form(request: Request) -> dict[str, list[str]]:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/x-www-form-urlencoded":
        raise SsoError("malformed", "the assertion consumer takes an HTML form post (HTTP-POST binding)")
    try:
        body = await read_body(request, MAX_FORM_BYTES)
    except BodyTooLarge:
        raise SsoError("malformed", f"the form post is larger than {MAX_FORM_BYTES // 1024} KiB") from None
    try:
        return parse_qs(body.decode("ascii"), keep_blank_values=True, max_num_fields=16, strict_parsing=False)
    except (UnicodeDecodeError, ValueError):
        raise SsoError("malformed", "the form post cannot be read") from None


async def saml_acs(request: Request) -> Response:
    ctx = _ctx(request)
    try:
        conn = await _enabled_connection(request)
        form = await _read_form(request)
        values = form.get("SAMLResponse", [])
        if len(values) != 1:
            raise SsoError("malformed", "the form post must carry exactly one SAMLResponse")
        # Off the loop: the signature checks are CPU work, and using the response up is a write as above.
        service = saml_service(ctx)
        checked = await asyncio.to_thread(service.check, conn, _origin(request), values[0])
        async with ctx.dbs.server_writes:
            identity = await asyncio.to_thread(service.use_up, checked)
        pending = identity.request
        intent = (
            LoginIntent.restore(pending.relay, pending.client_origin, pending.continuation, pending.client_state)
            if pending
            else LoginIntent()
        )
        who = SsoIdentity(
            issuer=identity.issuer,
            subject=identity.subject,
            email=identity.email,
            display_name=identity.display_name,
            groups=identity.groups,
        )
        response = await signed_in(ctx, conn, who, kind="saml", device_name=DEVICE_NAME, intent=intent)
    except SsoError as exc:
        log.info("SAML sign-in refused: %s (%s)", exc.sso_code, exc.message)
        return failure_response(request, exc)
    except HangarError as exc:
        log.info("SAML sign-in refused by the login outcome: %s", exc.message)
        return failure_response(request, SsoError("invalid", exc.message))
    except Exception:
        log.exception("SAML sign-in failed inside the server")
        return failure_response(request, SsoError("internal", "the server could not complete the sign-in"))
    return response


async def saml_metadata(request: Request) -> Response:
    try:
        xml = saml_service(_ctx(request)).sp_metadata(await _connection(request), _origin(request))
    except SsoError as exc:
        return failure_response(request, exc)
    return Response(xml, media_type="application/samlmetadata+xml")


SAML_ROUTES: list[BaseRoute] = [
    Route(LOGIN_PATH, rate_limited("signin-start", saml_login), methods=["GET"]),
    Route(ACS_PATH, failures_limited("signin", saml_acs, completes="signin-start"), methods=["POST"]),
    Route(METADATA_PATH, saml_metadata, methods=["GET"]),
]
