"""The one dispatcher of a process, and the op caller its agents use, built the same way wherever agents run: the
server (which also serves the socket and the MCP endpoint with it) and in-process commands (``hangar pipeline
run``), whose agents call the product's ops as tools too."""

from __future__ import annotations

from collections.abc import Callable

from hangar.config import Settings
from hangar.core.context import AppContext
from hangar.identity import IdentityService
from hangar.rpc.dispatcher import Dispatcher
from hangar.rpc.guardrails import Guardrails
from hangar.rpc.op_caller import OpCaller
from hangar.rpc.registry import OpRegistry

NO_MCP_IN_COMMANDS = (
    "this run is driven by a command (hangar pipeline run), which serves no MCP endpoint; run it through the "
    "server (agents.run, or a pipeline started there) to call Hangar back"
)


def listener_origin(settings: Settings) -> str:
    """The server's own listener as a program on this host reaches it (a wildcard address means loopback)."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(settings.host, settings.host)
    return f"http://{f'[{host}]' if ':' in host else host}:{settings.port}"


def op_caller(registry: OpRegistry, *, mcp_url: Callable[[], str] | None = None) -> OpCaller:
    """What agents call ops through, handed to ``open_context`` so it is there before any run starts."""
    return OpCaller(registry, mcp_url=mcp_url, no_mcp_reason=NO_MCP_IN_COMMANDS)


def attach_dispatcher(ctx: AppContext) -> Dispatcher:
    """Once the parts have started: the dispatcher over the op caller's registry, attached to it."""
    caller = ctx.service(OpCaller)
    dispatcher = Dispatcher(ctx, caller.registry, ctx.service(Guardrails), ctx.service(IdentityService))
    caller.attach(dispatcher)
    return dispatcher
