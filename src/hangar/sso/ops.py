"""The ``sso.*`` RPC ops (server owner only) and ``GET /auth/providers``.

Argument shapes are CONTRACTS §4. A workspace owner who is not the server owner gets ``forbidden`` from the
dispatcher (``server_owner=True``). ``sso.testConnection`` tests the saved record merged with the unsaved
values given, without saving. ``sso.setPairingEnabled`` refuses to forbid manual pairing unless at least one
connection is enabled, complete and passes the same test (the lockout guard: otherwise nobody new could get in).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, StrictBool, StrictInt
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from hangar.core.context import AppContext
from hangar.core.part import OpFunction
from hangar.errors import InvalidArgs, Refused
from hangar.identity import IdentityService
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, NoArgs, op
from hangar.sso.config import KINDS, Connection, OidcConnection, SamlConnection, SsoConfigStore, SsoKind
from hangar.sso.endpoints import acs_url, metadata_url, oidc_redirect_uri, scim_base_url, shown_origin
from hangar.sso.errors import SsoError
from hangar.sso.handoff import origin_of
from hangar.sso.oidc.flow import OidcService
from hangar.sso.results import (
    ConnectionFailed,
    ConnectionOutcome,
    ConnectionTest,
    ConnectionView,
    FailureReason,
    KindStatus,
    OidcConnectionOk,
    PairingState,
    SamlConnectionOk,
    ScimToken,
    SessionPolicyView,
    SpMetadata,
    SsoEndpoints,
    SsoStatus,
)
from hangar.sso.saml.metadata import parse_idp_metadata, sp_metadata_xml
from hangar.sso.saml.request import build_authn_request

log = logging.getLogger(__name__)

KindName = Literal["saml", "oidc"]
_GUARD_ORDER: tuple[SsoKind, ...] = ("oidc", "saml")
LABELS: dict[str, str] = {"saml": "Single sign-on (SAML)", "oidc": "Single sign-on (OpenID Connect)"}


class KindArgs(Args):
    kind: KindName


class SaveConfigArgs(Args):
    kind: KindName
    config: dict[str, Any]


class TestConnectionArgs(Args):
    kind: KindName
    config: dict[str, Any] | None = None


class SpMetadataArgs(Args):
    origin: str = Field(min_length=1, max_length=500)


# Security settings take strict types: ``true`` is not one minute and ``"yes"`` is not a boolean.
class PairingArgs(Args):
    enabled: StrictBool


class SessionPolicyArgs(Args):
    maxAgeMinutes: StrictInt = Field(ge=0, le=10 * 366 * 24 * 60)
    idleTimeoutMinutes: StrictInt = Field(ge=0, le=10 * 366 * 24 * 60)


async def _store(app: AppContext) -> SsoConfigStore:
    return await app.service(SsoConfigStore).fresh()


def _check_metadata(conn: Connection) -> None:
    """A SAML record's metadata must parse before it is saved (a broken one would only fail at login)."""
    if isinstance(conn, SamlConnection) and conn.configured:
        try:
            parse_idp_metadata(conn.idpMetadataXml or "")
        except SsoError as exc:
            raise InvalidArgs(f"config.{exc.message}", field="config.idpMetadataXml") from None


@op("sso.getConfig", kind="read", scope="server", server_owner=True)
async def get_config(ctx: OpContext, args: KindArgs) -> ConnectionView:
    """The saved connection of one kind, every field with its value; the client secret only as a flag."""
    return ConnectionView((await _store(ctx.app)).public_record(args.kind))


@op("sso.saveConfig", kind="mutate", scope="server", server_owner=True, actions=["secretAccess"])
async def save_config(ctx: OpContext, args: SaveConfigArgs) -> ConnectionView:
    """Validate, persist and apply a connection at once; fields left out keep their saved values."""
    store = await _store(ctx.app)
    preview = store.preview(args.kind, args.config)
    _check_metadata(preview)
    other: SsoKind = "oidc" if args.kind == "saml" else "saml"
    turning_off = store.get(args.kind).enabled and not preview.enabled
    if turning_off and not store.get(other).enabled and not await ctx.app.service(IdentityService).pairing_enabled():
        # The other half of the lockout guard: with manual pairing forbidden, the last connection stays on.
        raise Refused("manual pairing is forbidden, so the last enabled SSO connection cannot be turned off")
    record = await store.save(args.kind, args.config)
    # Field names only: values (and the secret above all) stay out of the log.
    log.info(
        "sso %s connection saved by %s (enabled=%s; fields %s)",
        args.kind,
        ctx.principal.label,
        record.enabled,
        ", ".join(sorted(args.config)),
    )
    return ConnectionView(store.public_record(args.kind))


@op("sso.status", kind="read", scope="server", server_owner=True)
async def status(ctx: OpContext, args: NoArgs) -> SsoStatus:
    """Enabled and configured flags per kind, SCIM token presence, the canonical origin, pairing."""
    store = await _store(ctx.app)
    return SsoStatus(
        saml=KindStatus(enabled=store.saml.enabled, configured=store.saml.configured),
        oidc=KindStatus(enabled=store.oidc.enabled, configured=store.oidc.configured),
        scim_token_present=store.scim_token() is not None,
        origin=shown_origin(ctx.app.settings)[0],
        pairing_enabled=await ctx.app.service(IdentityService).pairing_enabled(),
    )


async def run_test(app: AppContext, kind: SsoKind, conn: Connection) -> ConnectionOutcome:
    """The connection test short of a browser round trip: what was checked, or why it failed."""
    try:
        if isinstance(conn, SamlConnection):
            return _test_saml(app, conn)
        assert isinstance(conn, OidcConnection)
        return await _test_oidc(app, conn)
    except SsoError as exc:
        return ConnectionFailed(kind=kind, error=FailureReason(code=exc.sso_code, message=exc.message))


def _test_saml(app: AppContext, conn: SamlConnection) -> SamlConnectionOk:
    if not conn.configured:
        raise SsoError("invalid", "idpMetadataXml is missing")
    meta = parse_idp_metadata(conn.idpMetadataXml or "")
    origin, _ = shown_origin(app.settings)
    request = build_authn_request(
        sp_entity_id=conn.sp_entity_id(origin),
        acs_url=acs_url(origin),
        idp_sso_url=meta.sso_url,
        now=app.clock.now(),
    )
    return SamlConnectionOk(
        idp_entity_id=meta.entity_id,
        sso_url=meta.sso_url,
        certificates=len(meta.certificates),
        sp_entity_id=conn.sp_entity_id(origin),
        request_id=request.id,
        redirect_url=request.redirect_url,
    )


async def _test_oidc(app: AppContext, conn: OidcConnection) -> OidcConnectionOk:
    if not conn.issuer or not conn.clientId:
        raise SsoError("invalid", "issuer and clientId are required")
    service = app.service(OidcService)
    meta, keys = await service.discover_fresh(conn.issuer)
    key_set = await keys.for_kid(None)
    return OidcConnectionOk(
        issuer=meta.issuer,
        authorization_endpoint=meta.authorization_endpoint,
        token_endpoint=meta.token_endpoint,
        jwks_uri=meta.jwks_uri,
        signing_keys=len(key_set.keys),
    )


@op("sso.testConnection", kind="read", scope="server", server_owner=True, actions=["networkEgress"])
async def test_connection(ctx: OpContext, args: TestConnectionArgs) -> ConnectionTest:
    """Test the saved connection, or the saved one with the given unsaved values, without saving anything."""
    conn = (await _store(ctx.app)).preview(args.kind, args.config)
    return ConnectionTest(await run_test(ctx.app, args.kind, conn))


@op("sso.spMetadata", kind="read", scope="server", server_owner=True)
async def sp_metadata(ctx: OpContext, args: SpMetadataArgs) -> SpMetadata:
    """Our SAML service-provider entity descriptor for an origin (what the IdP's administrator imports)."""
    origin = origin_of(args.origin)
    if origin is None or origin != args.origin.rstrip("/").lower():
        raise InvalidArgs("origin must be an http(s) origin such as https://hangar.example.com", field="origin")
    conn = (await _store(ctx.app)).saml
    entity_id = conn.sp_entity_id(origin)
    return SpMetadata(
        origin=origin,
        entity_id=entity_id,
        acs_url=acs_url(origin),
        xml=sp_metadata_xml(entity_id, acs_url(origin)).decode(),
    )


@op("sso.endpoints", kind="read", scope="server", server_owner=True)
async def endpoints(ctx: OpContext, args: NoArgs) -> SsoEndpoints:
    """What an identity provider's administrator registers: the values the sign-ins use (``hangar.sso.endpoints``)."""
    origin, source = shown_origin(ctx.app.settings)
    return SsoEndpoints(
        origin=origin,
        origin_source=source,
        saml_entity_id=(await _store(ctx.app)).saml.sp_entity_id(origin),
        saml_acs_url=acs_url(origin),
        saml_metadata_url=metadata_url(origin),
        oidc_redirect_uri=oidc_redirect_uri(origin),
        scim_base_url=scim_base_url(origin),
    )


async def working_connection(app: AppContext) -> tuple[str | None, list[str]]:
    """The kind of the first connection that is enabled and passes its test, and why the others do not."""
    store = await _store(app)
    reasons: list[str] = []
    for kind in _GUARD_ORDER:
        conn = store.get(kind)
        if not conn.enabled:
            reasons.append(f"{kind} is not enabled")
            continue
        result = await run_test(app, kind, conn)
        if not isinstance(result, ConnectionFailed):
            return kind, reasons
        reasons.append(f"{kind} fails its test ({result.error.code}: {result.error.message})")
    return None, reasons


@op("sso.setPairingEnabled", kind="mutate", scope="server", server_owner=True)
async def set_pairing_enabled(ctx: OpContext, args: PairingArgs) -> PairingState:
    """Allow or forbid manual pairing; forbidding is refused while no SSO connection works (lockout guard)."""
    if not args.enabled:
        kind, reasons = await working_connection(ctx.app)
        if kind is None:
            raise Refused("manual pairing cannot be forbidden while no SSO connection works: " + "; ".join(reasons))
    await ctx.app.service(IdentityService).set_pairing_enabled(args.enabled)
    log.info("manual pairing %s by %s", "allowed" if args.enabled else "forbidden", ctx.principal.label)
    return PairingState(pairing_enabled=await ctx.app.service(IdentityService).pairing_enabled())


@op("sso.sessionPolicy", kind="read", scope="server", server_owner=True)
async def session_policy(ctx: OpContext, args: NoArgs) -> SessionPolicyView:
    """The device-credential maximum age and idle timeout, in minutes (0 means unset)."""
    return SessionPolicyView.model_validate(await ctx.app.service(IdentityService).session_policy())


@op("sso.setSessionPolicy", kind="mutate", scope="server", server_owner=True)
async def set_session_policy(ctx: OpContext, args: SessionPolicyArgs) -> SessionPolicyView:
    """Set the bounds; every later use of a device credential is checked against them."""
    policy = await ctx.app.service(IdentityService).set_session_policy(args.maxAgeMinutes, args.idleTimeoutMinutes)
    return SessionPolicyView.model_validate(policy)


@op("sso.scimRegenerateToken", kind="mutate", scope="server", server_owner=True, actions=["secretAccess"])
async def scim_regenerate_token(ctx: OpContext, args: NoArgs) -> ScimToken:
    """A new SCIM bearer token, returned this once; the previous token stops working."""
    token = (await _store(ctx.app)).regenerate_scim_token()
    log.info("SCIM token regenerated by %s", ctx.principal.label)
    return ScimToken(token=token)


SSO_OPS: list[OpFunction] = [
    get_config,
    save_config,
    status,
    endpoints,
    test_connection,
    sp_metadata,
    set_pairing_enabled,
    session_policy,
    set_session_policy,
    scim_regenerate_token,
]


@dataclass(frozen=True)
class Provider:
    """A sign-in the server offers: ``login_path`` on this origin starts it (CONTRACTS section 4)."""

    id: str
    kind: SsoKind
    label: str
    login_path: str


async def sign_in_providers(app: AppContext) -> list[Provider]:
    """The enabled SSO connections, as the connect screen and the OAuth sign-in page offer them."""
    store = await _store(app)
    return [Provider(kind, kind, LABELS[kind], f"/{kind}/login") for kind in KINDS if store.get(kind).enabled]


async def auth_providers(request: Request) -> Response:
    """The connect screen's probe: offered connections and whether manual pairing is allowed."""
    cors = {"Access-Control-Allow-Origin": "*", "Cache-Control": "no-store"}
    if request.method == "OPTIONS":
        preflight = {
            **cors,
            "Access-Control-Allow-Methods": "GET, OPTIONS",
            "Access-Control-Allow-Headers": request.headers.get("access-control-request-headers", "*"),
            "Access-Control-Max-Age": "600",
        }
        return Response(status_code=204, headers=preflight)
    app: AppContext = request.app.state.ctx
    providers = [
        {"id": p.id, "kind": p.kind, "label": p.label, "loginUrl": p.login_path} for p in await sign_in_providers(app)
    ]
    pairing = await app.service(IdentityService).pairing_enabled()
    return JSONResponse({"providers": providers, "pairingEnabled": pairing}, headers=cors)


SSO_ROUTES: list[BaseRoute] = [Route("/auth/providers", auth_providers, methods=["GET", "OPTIONS"])]
