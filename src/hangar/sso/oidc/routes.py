"""``GET /oidc/login`` and ``GET /oidc/callback``: failures become the 400 pages of CONTRACTS §4."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from hangar.httpkit.ratelimit import failures_limited, rate_limited
from hangar.sso.errors import SsoError
from hangar.sso.handoff import failure_response
from hangar.sso.oidc.flow import OidcService

log = logging.getLogger(__name__)


def _guarded(step: Callable[[OidcService, Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    async def handle(request: Request) -> Response:
        try:
            service = request.app.state.ctx.service(OidcService)
            return await step(service, request)
        except SsoError as exc:
            return failure_response(request, exc)
        except Exception:
            log.exception("OIDC %s failed", request.url.path)
            return failure_response(request, SsoError("internal", "the sign-in failed inside the server; see its log"))

    return handle


async def _login(service: OidcService, request: Request) -> Response:
    return await service.begin(request)


async def _callback(service: OidcService, request: Request) -> Response:
    return await service.finish(request)


OIDC_ROUTES: list[BaseRoute] = [
    Route("/oidc/login", rate_limited("signin-start", _guarded(_login)), methods=["GET"]),
    Route("/oidc/callback", failures_limited("signin", _guarded(_callback), completes="signin-start"), methods=["GET"]),
]
