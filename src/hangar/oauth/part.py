"""The OAuth part: its tables, its routes and the stores behind them."""

from __future__ import annotations

from starlette.routing import BaseRoute, Route

from hangar.core.context import AppContext
from hangar.core.part import Part
from hangar.httpkit.ratelimit import failures_limited, rate_limited
from hangar.oauth import authorize as a
from hangar.oauth import endpoints as e
from hangar.oauth.clients import Clients
from hangar.oauth.grants import Grants
from hangar.oauth.metadata import (
    AUTHORIZE_PATH,
    METADATA_PATH,
    REGISTER_PATH,
    REVOKE_PATH,
    TOKEN_PATH,
    authorization_server_metadata,
)
from hangar.oauth.pages import CONSENT_PATH, DECIDE_PATH, PAIR_PATH, SSO_PATH, STYLE_PATH, stylesheet
from hangar.oauth.requests import PendingRequests
from hangar.oauth.tables import MIGRATIONS
from hangar.sso import RETURN_PATH


async def _start(ctx: AppContext) -> None:
    ctx.provide(Clients(ctx.dbs.server, ctx.clock))
    ctx.provide(PendingRequests(ctx.dbs.server, ctx.clock))
    ctx.provide(Grants(ctx))


ROUTES: list[BaseRoute] = [
    Route(METADATA_PATH, authorization_server_metadata, methods=["GET", "OPTIONS"]),
    Route(REGISTER_PATH, rate_limited("register", e.register), methods=["POST", "OPTIONS"]),
    Route(TOKEN_PATH, e.token, methods=["POST", "OPTIONS"]),
    Route(REVOKE_PATH, e.revoke, methods=["POST", "OPTIONS"]),
    Route(AUTHORIZE_PATH, rate_limited("signin-start", a.page_route(a.authorize)), methods=["GET"]),
    Route(PAIR_PATH, failures_limited("pair", a.page_route(a.pair)), methods=["POST"]),
    Route(SSO_PATH, a.page_route(a.sso_start), methods=["GET"]),
    Route(RETURN_PATH, failures_limited("signin", a.page_route(a.sso_return)), methods=["GET"]),
    Route(CONSENT_PATH, a.page_route(a.consent), methods=["GET"]),
    Route(DECIDE_PATH, failures_limited("signin", a.page_route(a.decide), completes="signin-start"), methods=["POST"]),
    Route(STYLE_PATH, stylesheet, methods=["GET"]),
]

OAUTH_PART = Part(name="oauth", routes=ROUTES, migrations=[MIGRATIONS], start=_start)
