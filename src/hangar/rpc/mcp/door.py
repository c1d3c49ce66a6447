"""The product's MCP endpoint at ``/mcp`` (CONTRACTS.md section 8): the op registry as tools over Streamable HTTP,
on the official MCP SDK, through the same dispatcher as the RPC socket.

The SDK speaks the protocol (every revision it knows, sessions with ``Mcp-Session-Id``, POST, the GET stream,
DELETE). In front of it a gate authenticates the bearer device credential on every request (401 with the
protected-resource metadata's address otherwise) and hands the SDK the caller, which binds a session to the
credential that opened it: a session id presented with another credential is unknown. A client that keeps no
session is served too: a request that carries no session id and is not an ``initialize`` goes to a stateless
twin of the same server.

This module is the composition and the gate's routing; what each piece does lives in the module named for it
(the package's docstring lists them), and each is handed what it needs here rather than sharing the door's state.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import mcp.types as mt
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

import hangar
from hangar.core.principal import Principal
from hangar.errors import Unauthenticated
from hangar.httpkit.requests import BodyTooLarge, BodyTooSlow, read_body, replaying
from hangar.rpc.authority import Authority
from hangar.rpc.dispatcher import Dispatcher
from hangar.rpc.mcp.exchange import Exchanges
from hangar.rpc.mcp.limits import SeatLimits
from hangar.rpc.mcp.listen import Listening
from hangar.rpc.mcp.ops import OpRunner
from hangar.rpc.mcp.request import with_caller
from hangar.rpc.mcp.resources import Resources
from hangar.rpc.mcp.sessions import SessionBook, SessionCap
from hangar.rpc.mcp.subscriptions import Subscriptions
from hangar.rpc.mcp.tool_calls import ToolCalls
from hangar.rpc.mcp.wire import (
    MAX_BODY,
    answer,
    bearer,
    header,
    is_initialize,
    preflight,
    rpc_error,
    unauthorized,
    with_cors,
)
from hangar.rpc.registry import OpRegistry

INSTRUCTIONS = (
    "Hangar's own API: every operation of the server as a tool, named as the operation (workspaces.list, "
    "spaces.create, rig.open, pipelines.runs.start...). Workspace-scoped tools take workspace_id; start with "
    "workspaces.list. A refused call answers with isError and a code: forbidden, invalid_args, refused (a "
    "guardrail), not_found, conflict, unavailable."
)


class McpDoor:
    """Owns the SDK server and its two session managers; the instance is the ``/mcp`` ASGI endpoint. ``origin``
    gives the server's canonical origin (the metadata's address in a 401); ``limits`` caps the sessions one
    credential, one user and one workspace hold open (``sessions``)."""

    def __init__(self, registry: OpRegistry, origin: Callable[[], str], limits: SeatLimits) -> None:
        self.registry = registry
        self.origin = origin
        self.seats = SessionCap(limits)
        self.ops = OpRunner(registry)
        self.tool_calls = ToolCalls(self.ops)
        self.resources = Resources(self.ops)
        self.listening = Listening()
        self.subscriptions = Subscriptions(self.resources, self.ops, self.seats, self.listening)
        self.server: Server[Any] = Server(
            "hangar",
            version=hangar.__version__,
            title="Hangar",
            instructions=INSTRUCTIONS,
            on_list_tools=self.tool_calls.list_tools,
            on_call_tool=self.tool_calls.call_tool,
            on_list_resources=self.resources.list_resources,
            on_list_resource_templates=self.resources.list_templates,
            on_read_resource=self.resources.read,
            on_subscribe_resource=self.subscriptions.subscribe,
            on_unsubscribe_resource=self.subscriptions.unsubscribe,
            on_subscriptions_listen=self.subscriptions.listen,
        )
        # Every request carries a bearer credential a browser on another site cannot attach, so the SDK's Host
        # and Origin allowlist (DNS-rebinding protection) would only refuse the server's own public names.
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        self.sessions = StreamableHTTPSessionManager(
            app=self.server, security_settings=security, max_request_body_size=MAX_BODY
        )
        self.sessionless = StreamableHTTPSessionManager(
            app=self.server,
            stateless=True,
            json_response=True,
            security_settings=security,
            max_request_body_size=MAX_BODY,
        )
        self.book = SessionBook(self.sessions, self.seats)
        self.server.middleware.append(self.book.middleware)
        self.exchanges = Exchanges(self.tool_calls, self.sessions, self.book)

    @property
    def tools(self) -> list[mt.Tool]:
        """The tool catalogue, for whoever offers it (the door is a service of the running server)."""
        return self.tool_calls.tools

    @contextlib.asynccontextmanager
    async def run(self, dispatcher: Dispatcher, authority: Authority) -> AsyncIterator[None]:
        self.ops.bind(dispatcher, authority)
        self.book.metrics = dispatcher.app.metrics
        try:
            async with self.sessions.run(), self.sessionless.run():
                yield
        finally:
            await self.subscriptions.close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The gate: authenticate the caller, then route the request to the one part that serves it."""
        send = with_cors(send)
        if scope["method"] == "OPTIONS":
            await preflight(send)
            return
        authority = self.ops.authority
        if authority is None:
            await answer(send, 503, {"error": "the server is starting"}, [])
            return
        token = bearer(scope)
        principal: Principal | None = None
        if token is not None:
            try:
                principal = await authority.authenticate(token)
            except Unauthenticated:
                principal = None
        if token is None or principal is None:
            await unauthorized(send, self.origin(), "a valid device credential is required" if token else None)
            return
        session_id = header(scope, MCP_SESSION_ID_HEADER.encode())
        if scope["method"] != "POST":
            await self.sessions.handle_request(with_caller(scope, token, principal), receive, send)
            return
        try:
            body = await read_body(Request(scope, receive), MAX_BODY)
        except (BodyTooLarge, BodyTooSlow) as err:
            await answer(send, err.http_status, rpc_error(err.message), [])
            return
        if await self.exchanges.answer(scope, body, token, principal, session_id, send):
            return  # the hot path: a plain tool call, served without the SDK's transport
        scope = with_caller(scope, token, principal)
        if session_id is not None:
            self.exchanges.cancel(body, session_id, principal)  # the SDK then acknowledges the notification
            await self.sessions.handle_request(scope, replaying(body, receive), send)
            return
        if not is_initialize(body):
            await self.sessionless.handle_request(scope, replaying(body, receive), send)
            return
        await self.book.initialize(scope, body, receive, send, principal)
