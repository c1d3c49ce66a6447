"""What an operator watches the server with: ``GET /metrics`` (the server owner's), the request id each HTTP
request and WebSocket connection is given, and the delay with which events reach this server's subscribers.

``/metrics`` sits on the server's own listener behind the server owner's device credential (CONTRACTS.md section
11), not on a separate port: a scraper already reaches the listener, and what the counts reveal (how busy the
server is, which ops fail) is the owner's to see, like the other ``server.*`` reads. Any other caller, a member's
credential or the owner's own credential narrowed to a workspace included, is answered 401.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from hangar.core.context import AppContext
from hangar.core.event_types import StoredEvent
from hangar.core.events import Subscription
from hangar.core.metric_collectors import EXPOSITION_TYPE
from hangar.core.metrics import Metrics
from hangar.core.requestids import begin_request
from hangar.errors import NotFound, Unauthenticated
from hangar.identity import IdentityService

log = logging.getLogger(__name__)

METRICS_PATH = "/metrics"


async def metrics_endpoint(request: Request) -> Response:
    ctx: AppContext = request.app.state.ctx
    if not ctx.metrics.enabled:
        raise NotFound("metrics are turned off on this server (HANGAR_METRICS=false)")
    principal = await ctx.service(IdentityService).authenticate_bearer(request)
    if not principal.is_server_owner or principal.scoped or principal.agent_id is not None:
        raise Unauthenticated("GET /metrics needs the server owner's device credential")
    return Response(ctx.metrics.exposition(), media_type=EXPOSITION_TYPE)


class RequestIds:
    """ASGI middleware: a new request id for each HTTP request and each WebSocket connection (the RPC socket gives
    each frame its own), sent back on HTTP responses as ``X-Request-Id`` so a caller can find its lines."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        rid = begin_request().encode()
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return

        async def stamped(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), (b"x-request-id", rid)]}
            await send(message)

        await self.app(scope, receive, stamped)


class SiteRequests:
    """ASGI middleware around the website ``hangar serve`` runs beside the server: each HTTP request counted in the
    server's metrics by method and status class (``hangar_site_requests_total``)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.metrics.enabled:
            await self.app(scope, receive, send)
            return
        status = 500  # a request that ends without a response start failed inside

        async def noted(message: MutableMapping[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, noted)
        finally:
            self.metrics.site_request(str(scope.get("method", "")), status)


def follow_event_lag(ctx: AppContext) -> Subscription | None:
    """Observe, for every event this server delivers, how long after its recording it reached the subscribers."""
    if not ctx.metrics.enabled:
        return None

    async def observe(ev: StoredEvent) -> None:
        ctx.metrics.event_delivered((ctx.clock.now() - ev.occurred_at).total_seconds())

    return ctx.bus.subscribe(observe, name="metrics:event-lag")
