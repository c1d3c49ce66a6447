"""The server's ASGI application: ``/healthz``, ``/readyz`` and ``/metrics`` (``hangar.server.readiness``,
``hangar.server.monitoring``), ``/rpc``, every part's routes and, last, the web client (its assets and the app
shell for every other GET, ``hangar.server.webclient``), with a lifespan that opens the application context and
starts the parts, and the one error handler that renders every route's JSON error body (``hangar.httpkit.errors``)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route, WebSocketRoute

import hangar
from hangar.config import Settings
from hangar.core.clock import Clock
from hangar.core.commandline import hangar_command
from hangar.core.confine import confinement_reason, trusted_host_exec
from hangar.core.context import AppContext
from hangar.core.metrics import Metrics
from hangar.core.part import Part
from hangar.core.tables import MIGRATIONS as KERNEL_MIGRATIONS
from hangar.httpkit.errors import EXCEPTION_HANDLERS
from hangar.identity import IdentityService
from hangar.rpc.access import AccessMonitor
from hangar.rpc.endpoint import rpc_endpoint
from hangar.rpc.mcp.deferred import DeferredDoor
from hangar.rpc.mcp.limits import SeatLimits
from hangar.rpc.mcp.wire import MCP_PATH, METADATA_PATH, protected_resource
from hangar.rpc.registry import OpRegistry
from hangar.rpc.relay import RELAY_PATH
from hangar.rpc.relay_route import relayed_op
from hangar.server.context_factory import open_context
from hangar.server.dispatch import attach_dispatcher, listener_origin, op_caller
from hangar.server.monitoring import METRICS_PATH, RequestIds, follow_event_lag, metrics_endpoint
from hangar.server.readiness import READYZ_PATH, Readiness, readyz
from hangar.server.webclient import default_dist, web_client_routes

log = logging.getLogger("hangar.server")


async def healthz(_request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok", "version": hangar.__version__})


def build_server(
    settings: Settings,
    *,
    clock: Clock | None = None,
    parts: Sequence[Part] | None = None,
    on_ready: list[AppContext] | None = None,
) -> Starlette:
    """The server app. ``on_ready``, when given, receives the context once started (tests use it)."""
    if parts is None:
        from hangar.server.parts import all_parts

        parts = all_parts()
    metrics = Metrics(enabled=settings.metrics)  # this server's own registry: tests run many servers in one process
    registry = OpRegistry(o for p in parts for o in p.ops)
    # The door is built on its first request: the MCP SDK it stands on is most of a start's time, and most starts
    # never see an MCP client.
    door = DeferredDoor(registry, lambda: settings.origin, SeatLimits.from_settings(settings))
    routes: list[BaseRoute] = [
        Route("/healthz", healthz, methods=["GET"]),
        Route(READYZ_PATH, readyz, methods=["GET"]),
        Route(METRICS_PATH, metrics_endpoint, methods=["GET"]),
        WebSocketRoute("/rpc", rpc_endpoint),
        Route(RELAY_PATH, relayed_op, methods=["POST"]),
        Route(MCP_PATH, door, methods=["GET", "POST", "DELETE", "OPTIONS"]),
        Route(METADATA_PATH, protected_resource, methods=["GET"]),
    ]
    for part in parts:
        routes.extend(part.routes)
    routes.extend(web_client_routes(settings.web_dist or default_dist()))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        caller = op_caller(registry, mcp_url=lambda: f"{listener_origin(settings)}/mcp")
        async with open_context(
            settings, clock=clock, parts=parts, follow_events=True, services=[caller], metrics=metrics
        ) as ctx:
            identity = ctx.service(IdentityService)
            monitor = ctx.provide(AccessMonitor(identity.authority_stamp))
            monitor.start()
            app.state.ctx = ctx
            app.state.registry = registry
            app.state.dispatcher = attach_dispatcher(ctx)
            app.state.readiness = Readiness([KERNEL_MIGRATIONS, *(m for p in parts for m in p.migrations)])
            follow_event_lag(ctx)
            await warn_about_host_execution(ctx)
            if on_ready is not None:
                on_ready.append(ctx)
            ctx.provide(door)  # the door, built on demand, for whoever needs it (tests look into its sessions)
            try:
                async with door.run(app.state.dispatcher, identity):
                    yield
            finally:
                await monitor.aclose()
                await app.state.dispatcher.relay.aclose()

    app = Starlette(
        routes=routes, lifespan=lifespan, exception_handlers=EXCEPTION_HANDLERS, middleware=[Middleware(RequestIds)]
    )
    app.state.metrics = metrics  # the website served beside it counts its requests here (``hangar serve``)
    return app


async def warn_about_host_execution(ctx: AppContext) -> None:
    """Trusted host execution is a deliberate choice of a single-person install: said loudly at every start."""
    if await trusted_host_exec(ctx):
        log.warning(
            "TRUSTED HOST EXECUTION IS ON: shell steps and command agents run on this host as the server's "
            "user, not in enclosures, with access to everything the server can reach, its secrets and every "
            "workspace's data included. Turn it off with: %s",
            hangar_command("admin", "trusted-host-exec", "off", "--data-dir", ctx.settings.data_dir),
        )
    elif reason := await confinement_reason(ctx):
        log.warning("shell steps and command agents will be refused: %s", reason)
