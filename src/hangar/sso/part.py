"""The SSO part: connection records, SAML, OIDC, SCIM, the ``sso.*`` ops and their routes."""

from __future__ import annotations

import functools

from hangar.core.context import AppContext
from hangar.core.part import Part
from hangar.identity import IdentityService
from hangar.sso.config import COUNTER, MIGRATIONS, SsoConfigStore
from hangar.sso.continuation import SignInHandoffs
from hangar.sso.handoff import handoff_routes
from hangar.sso.oidc.flow import OidcService
from hangar.sso.oidc.routes import OIDC_ROUTES
from hangar.sso.ops import SSO_OPS, SSO_ROUTES
from hangar.sso.saml.routes import SAML_ROUTES
from hangar.sso.saml.service import SamlService, saml_service
from hangar.sso.scim.routes import SCIM_ROUTES
from hangar.sso.scim.store import ScimDirectory


async def _start(ctx: AppContext) -> None:
    store = SsoConfigStore(ctx.dbs.server, ctx.secrets, ctx.clock, functools.partial(ctx.dbs.stamp, None, COUNTER))
    await store.fresh()
    ctx.provide(store)
    # SAML and OIDC share one connection for their pending sign-ins (``hangar.sso.state``).
    saml = saml_service(ctx)
    ctx.provide(OidcService(ctx, store, saml.db))
    ctx.provide(ScimDirectory(ctx.dbs.server, ctx.service(IdentityService), ctx.clock))
    ctx.provide(SignInHandoffs(ctx.dbs.server, ctx.clock))


async def _stop(ctx: AppContext) -> None:
    oidc = ctx.maybe_service(OidcService)
    if oidc is not None:
        await oidc.aclose()
    saml = ctx.maybe_service(SamlService)
    if saml is not None:
        saml.db.close()


SSO_PART = Part(
    name="sso",
    ops=SSO_OPS,
    routes=[*SAML_ROUTES, *OIDC_ROUTES, *SCIM_ROUTES, *SSO_ROUTES, *handoff_routes()],
    migrations=[MIGRATIONS],
    start=_start,
    stop=_stop,
)
