"""The product's MCP endpoint at ``/mcp`` (CONTRACTS.md section 8): the op registry as tools over Streamable HTTP,
on the official MCP SDK, through the same dispatcher as the RPC socket.

The SDK speaks the protocol (every revision it knows, sessions with ``Mcp-Session-Id``, POST, the GET stream,
DELETE). In front of it a gate authenticates the bearer device credential on every request (401 with the
protected-resource metadata's address otherwise) and hands the SDK the caller, which binds a session to the
credential that opened it: a session id presented with another credential is unknown. A client that keeps no
session is served too: a request that carries no session id and is not an ``initialize`` goes to a stateless
twin of the same server.

A tool call is one op call: the dispatcher's checks in the socket's order (credential, server owner, role,
arguments, guardrails), the op's handler, its audit rows marked ``door: mcp``. A refusal or failure is a tool
result with ``isError`` and the socket's error code, never a protocol error: the agent reads why.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import Any

import anyio
import mcp.types as mt
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import DEFAULT_SESSION_IDLE_TIMEOUT, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

import hangar
from hangar.core.http import BodyTooLarge, bearer_token, read_body, replaying
from hangar.core.principal import Principal
from hangar.errors import Forbidden, HangarError, Unauthenticated
from hangar.rpc.authority import Authority
from hangar.rpc.context import OpContext
from hangar.rpc.dispatcher import Ask, Dispatcher
from hangar.rpc.guardrails import AskFirst
from hangar.rpc.mcp_exchange import (
    EXCHANGE_KEY,
    REQUEST_CANCELLED,
    NeedsExchange,
    SessionFacts,
    cancelled_request,
    plain_tool_call,
    revision,
    serve_call,
)
from hangar.rpc.mcp_listen import Follow, Listening
from hangar.rpc.mcp_resources import KINDS, ResourceKind, arguments, find
from hangar.rpc.mcp_sessions import MAX_SESSIONS_PER_CREDENTIAL, Seat, SessionCap
from hangar.rpc.mcp_tools import catalogue, structured
from hangar.rpc.registry import OpRegistry, OpSpec

log = logging.getLogger(__name__)

MAX_BODY = 1024 * 1024
INVALID_PARAMS = -32602
INVALID_REQUEST = -32600
RESOURCE_NOT_FOUND = -32002  # MCP's code for a resource that is not there
REFUSED = -32001  # an op refused reading or following a resource; the message starts with the socket's code
MAX_SUBSCRIPTIONS = 32  # per session
ASK_TIMEOUT_S = 300.0  # how long an ask-first question waits for the person before the call stays refused
METADATA_PATH = "/.well-known/oauth-protected-resource"
MCP_PATH = "/mcp"  # the resource the authorization server issues tokens for (RFC 8707)
PRINCIPAL_KEY = "hangar.principal"  # where the gate leaves the caller on the request's ASGI scope
SEAT_KEY = "hangar.mcp.seat"  # where it leaves an initialize's seat under its credential's cap
TOO_MANY_SESSIONS = -32000  # the JSON-RPC error of a 429: the credential holds all the sessions it may
INSTRUCTIONS = (
    "Hangar's own API: every operation of the server as a tool, named as the operation (workspaces.list, "
    "spaces.create, rig.open, pipelines.runs.start...). Workspace-scoped tools take workspace_id; start with "
    "workspaces.list. A refused call answers with isError and a code: forbidden, invalid_args, refused (a "
    "guardrail), not_found, conflict, unavailable."
)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _bearer(scope: Scope) -> str | None:
    return bearer_token(_header(scope, b"authorization"))


async def _answer(send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]) -> None:
    raw = json.dumps(body).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": raw})


class McpDoor:
    """Owns the SDK server and its two session managers; the instance is the ``/mcp`` ASGI endpoint. ``origin``
    gives the server's canonical origin (the metadata's address in a 401); ``sessions_per_credential`` caps the
    sessions one device credential holds open (``mcp_sessions``)."""

    def __init__(
        self,
        registry: OpRegistry,
        origin: Callable[[], str],
        sessions_per_credential: int = MAX_SESSIONS_PER_CREDENTIAL,
    ) -> None:
        self.registry = registry
        self.origin = origin
        self.seats = SessionCap(sessions_per_credential)
        self.tools = [mt.Tool.model_validate(t) for t in catalogue(registry)]
        self._dispatcher: Dispatcher | None = None
        self._authority: Authority | None = None
        self.server: Server[Any] = Server(
            "hangar",
            version=hangar.__version__,
            title="Hangar",
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource,
            on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe,
            on_subscriptions_listen=self._listen,
        )
        self.listening = Listening()
        self.server.middleware.append(self._on_initialize)
        self._settled: dict[str, SessionFacts] = {}  # by session id
        self._exchanges: dict[tuple[str, str | int], asyncio.Future[Any]] = {}  # (session id, request id)
        self._following: dict[tuple[str, str], asyncio.Task[None]] = {}  # (session id, uri)
        self._watched_sessions: set[str] = set()
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

    @contextlib.asynccontextmanager
    async def run(self, dispatcher: Dispatcher, authority: Authority) -> AsyncIterator[None]:
        self._dispatcher, self._authority = dispatcher, authority
        try:
            async with self.sessions.run(), self.sessionless.run():
                yield
        finally:
            self.listening.close()
            await self._stop_following(dict(self._following))

    # -- the gate ----------------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        send = _with_cors(send)
        if scope["method"] == "OPTIONS":
            await _preflight(send)
            return
        if self._authority is None:
            await _answer(send, 503, {"error": "the server is starting"}, [])
            return
        token = _bearer(scope)
        principal: Principal | None = None
        if token is not None:
            try:
                principal = await self._authority.authenticate(token)
            except Unauthenticated:
                principal = None
        if token is None or principal is None:
            await self._unauthorized(send, "a valid device credential is required" if token else None)
            return
        # The SDK keys a session to this caller: the same credential must come back with the session id.
        scope = {**scope, "user": AuthenticatedUser(self._access(token, principal)), PRINCIPAL_KEY: principal}
        session_id = _header(scope, MCP_SESSION_ID_HEADER.encode())
        if scope["method"] != "POST":
            await self.sessions.handle_request(scope, receive, send)
            return
        try:
            body = await read_body(Request(scope, receive), MAX_BODY)
        except BodyTooLarge as err:
            await _answer(send, 413, _rpc_error(err.message), [])
            return
        if await self._in_one_exchange(scope, body, principal, session_id, send):
            return
        if session_id is not None:
            self._cancel_exchange(body, session_id, principal)  # the SDK then acknowledges the notification
            await self.sessions.handle_request(scope, replaying(body, receive), send)
            return
        if not _is_initialize(body):
            await self.sessionless.handle_request(scope, replaying(body, receive), send)
            return
        seat = self.seats.take(principal.device_id)
        if seat is None:
            refusal = self.seats.refusal(self.sessions.session_idle_timeout or DEFAULT_SESSION_IDLE_TIMEOUT)
            await _answer(send, 429, _rpc_error(refusal, TOO_MANY_SESSIONS, _request_id(body)), [])
            return
        try:
            await self.sessions.handle_request({**scope, SEAT_KEY: seat}, replaying(body, receive), send)
        finally:
            if not seat.opened:  # nothing was opened (refused, failed, a revision without sessions)
                self.seats.give_back(seat)

    async def _on_initialize(self, ctx: Any, call_next: Any) -> Any:
        """SDK middleware. An ``initialize`` that opens a session keeps its seat until the session ends, and what
        it settled is kept for calls answered in one exchange; the session's connection unwinds its exit stack
        however it ends (DELETE, idle timeout, shutdown, crash), which lets both go."""
        if ctx.method != "initialize":
            return await call_next(ctx)
        scope = getattr(getattr(ctx, "request", None), "scope", None)
        seat = scope.get(SEAT_KEY) if isinstance(scope, dict) else None
        stack = _connection_stack(ctx)
        session_id = getattr(_connection(ctx), "session_id", None)
        if not isinstance(seat, Seat) or seat.opened or stack is None or session_id is None:
            return await call_next(ctx)
        seat.opened = True
        stack.callback(self.seats.give_back, seat)
        result = await call_next(ctx)
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        params = ctx.params if isinstance(ctx.params, Mapping) else {}
        if isinstance(version, str) and version in HANDSHAKE_PROTOCOL_VERSIONS:
            self._settled[session_id] = SessionFacts(
                seat.device_id, version, params.get("clientInfo"), params.get("capabilities")
            )
            stack.callback(self._settled.pop, session_id, None)
        return result

    def _cancel_exchange(self, body: bytes, session_id: str, principal: Principal) -> None:
        """A ``notifications/cancelled`` for a call being answered in one exchange of this credential's session."""
        request_id = cancelled_request(body)
        facts = self._settled.get(session_id)
        call = None if request_id is None else self._exchanges.get((session_id, request_id))
        if call is not None and facts is not None and facts.device_id == principal.device_id:
            call.cancel()

    async def _in_one_exchange(
        self, scope: Scope, body: bytes, principal: Principal, session_id: str | None, send: Send
    ) -> bool:
        """Answer a plain tool call in one exchange (``mcp_exchange``) where it may be; False: the SDK serves it.
        In a session, only one this credential opened and the SDK still serves, which counts as busy meanwhile."""
        message = plain_tool_call(body)
        if message is None:
            return False
        facts = None if session_id is None else self._settled.get(session_id)
        if session_id is not None and (facts is None or facts.device_id != principal.device_id):
            return False
        version = revision(Headers(scope=scope), facts)
        if version is None:
            return False
        with _busy(self.sessions, session_id) as live:
            if not live:
                return False
            call = asyncio.ensure_future(serve_call(self.server, scope, message, version, facts))
            key = (session_id, message["id"]) if session_id is not None else None
            if key is not None:
                self._exchanges[key] = call  # a notifications/cancelled for it can reach it
            try:
                answer = await call
            except NeedsExchange:
                return False
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if not call.cancelled() or (current is not None and current.cancelling()):
                    raise
                # Cancelled by the client: the 2025 revisions end such a request with this error, as the SDK does.
                answer = {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": REQUEST_CANCELLED, "message": "Request cancelled"},
                }
            finally:
                if key is not None and self._exchanges.get(key) is call:
                    del self._exchanges[key]
                if not call.done():
                    call.cancel()
        if answer is None:
            return False
        headers = [(MCP_SESSION_ID_HEADER.lower().encode(), session_id.encode())] if session_id else []
        await _answer(send, 200, answer, headers)
        return True

    async def _unauthorized(self, send: Send, problem: str | None) -> None:
        challenge = f'Bearer resource_metadata="{self.origin()}{METADATA_PATH}"'
        if problem is not None:
            challenge += f', error="invalid_token", error_description="{problem}"'
        body = {"error": "invalid_token" if problem else "unauthorized", "error_description": problem or "sign in"}
        await _answer(send, 401, body, [(b"www-authenticate", challenge.encode())])

    @staticmethod
    def _access(token: str, principal: Principal) -> AccessToken:
        return AccessToken(token=token, client_id=principal.device_id, scopes=[], subject=principal.user_id)

    # -- the SDK's handlers ------------------------------------------------------------------------------------

    async def _list_tools(self, ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        """The whole catalogue, or for a credential narrower than its holder (an OAuth client's, an agent's) the
        tools it reaches: a client is not offered what every call would refuse."""
        principal = _principal_of(ctx)
        if principal is None or not principal.scoped:
            return mt.ListToolsResult(tools=self.tools)
        return mt.ListToolsResult(tools=[t for t in self.tools if _reaches(principal, self.registry.get(t.name))])

    async def _call_tool(self, ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        spec = self.registry.get(params.name)
        if spec is None or spec.kind == "watch":
            raise MCPError(INVALID_PARAMS, f"there is no tool named {params.name!r}; tools/list names them all")
        token = _token_of(ctx)
        assert self._dispatcher is not None
        if token is None:  # the gate lets nothing through without one; a transport that drops it is refused
            return _tool_error(Unauthenticated("a valid device credential is required"))
        try:
            async with _progress(ctx, params, spec.name) as progress:
                wire = await self._run(ctx, token, spec.name, dict(params.arguments or {}), progress)
        except HangarError as err:
            return _tool_error(err)
        content = structured(wire)
        text = json.dumps(content, ensure_ascii=False)
        return mt.CallToolResult(content=[mt.TextContent(text=text)], structured_content=content)

    async def _run(
        self, ctx: Any, token: str, op_name: str, args: dict[str, Any], progress: Progress | None = None
    ) -> Any:
        """One op as the caller, through the dispatcher; a watch op answers its first reply and stops."""
        spec = self.registry.get(op_name)
        assert spec is not None and self._dispatcher is not None
        req_id = getattr(ctx, "request_id", None)
        op_ctx, parsed = await self._dispatcher.prepare(
            token, req_id, spec, args, door="mcp", ask=_asker(ctx), progress=progress, principal=_principal_of(ctx)
        )
        if spec.kind != "watch":
            return await self._dispatcher.call(op_ctx, parsed)
        watch = self._dispatcher.watch(op_ctx, parsed)
        try:
            return spec.result_to_wire(await _first(spec.name, watch))
        finally:
            await watch.aclose()  # type: ignore[attr-defined]

    # -- resources ---------------------------------------------------------------------------------------------

    async def _list_resources(self, ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListResourcesResult:
        return mt.ListResourcesResult(resources=[])  # every resource is named by a template

    async def _list_templates(
        self, ctx: Any, params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourceTemplatesResult:
        templates = [
            mt.ResourceTemplate(
                uri_template=k.template, name=k.name, description=k.description, mime_type="application/json"
            )
            for k in KINDS
        ]
        return mt.ListResourceTemplatesResult(resource_templates=templates)

    def _resource(self, uri: str) -> tuple[ResourceKind, dict[str, str]]:
        found = find(uri)
        if found is None:
            raise MCPError(RESOURCE_NOT_FOUND, f"no resource at {uri!r}; resources/templates/list names them")
        return found

    async def _read_resource(self, ctx: Any, params: mt.ReadResourceRequestParams) -> mt.ReadResourceResult:
        uri = str(params.uri)
        kind, variables = self._resource(uri)
        token = _token_of(ctx) or ""
        content: dict[str, Any] = {}
        try:
            for call in kind.reads:
                wire = await self._run(ctx, token, call[1], arguments(call, variables))
                if call[0] is None:
                    content.update(structured(wire))
                else:
                    content[call[0]] = wire
        except HangarError as err:
            raise _resource_error(err) from None
        text = json.dumps(content, ensure_ascii=False)
        return mt.ReadResourceResult(
            contents=[mt.TextResourceContents(uri=uri, mime_type="application/json", text=text)]
        )

    def _followable(self, uri: str) -> tuple[ResourceKind, dict[str, str]]:
        kind, variables = self._resource(uri)
        if kind.watch is None:
            raise MCPError(INVALID_PARAMS, f"{kind.name} resources change only when read again; read {uri} instead")
        return kind, variables

    async def _start_watch(self, ctx: Any, token: str, uri: str) -> tuple[Any, OpContext]:
        """The resource's watch op, run as the caller through the dispatcher and started: its first reply (the
        state a read gives) is taken, so a refusal or a missing record is answered here."""
        kind, variables = self._followable(uri)
        assert kind.watch is not None and self._dispatcher is not None
        spec = self.registry.get(kind.watch[1])
        assert spec is not None
        try:
            op_ctx, parsed = await self._dispatcher.prepare(
                token, ctx.request_id, spec, arguments(kind.watch, variables), door="mcp", principal=_principal_of(ctx)
            )
        except HangarError as err:
            raise _resource_error(err) from None
        watch = self._dispatcher.watch(op_ctx, parsed)
        try:
            await _first(spec.name, watch)
        except HangarError as err:
            await watch.aclose()  # type: ignore[attr-defined]
            raise _resource_error(err) from None
        return watch, op_ctx

    async def _subscribe(self, ctx: Any, params: mt.SubscribeRequestParams) -> mt.EmptyResult:
        uri = str(params.uri)
        self._followable(uri)
        if not _session_id(ctx):
            raise MCPError(INVALID_PARAMS, "subscriptions need a session: initialize and send its Mcp-Session-Id")
        session_id = _session_id(ctx)
        key = (session_id, uri)
        if key not in self._following and sum(k[0] == session_id for k in self._following) >= MAX_SUBSCRIPTIONS:
            raise MCPError(INVALID_PARAMS, f"a session follows at most {MAX_SUBSCRIPTIONS} resources; unsubscribe one")
        token = _token_of(ctx) or ""
        watch, op_ctx = await self._start_watch(ctx, token, uri)
        previous = self._following.pop(key, None)
        if previous is not None:
            previous.cancel()
        self._following[key] = asyncio.get_running_loop().create_task(
            self._follow(key, watch, ctx.session, op_ctx), name=f"mcp-subscription:{uri}"
        )
        self._end_with_session(ctx, session_id)
        return mt.EmptyResult()

    def _end_with_session(self, ctx: Any, session_id: str) -> None:
        """Follows end with their session: the SDK drops notifications to a session that is gone without a word,
        so nothing else would ever end them. The connection's exit stack unwinds when the session ends (a DELETE,
        the idle timeout, the server stopping); the SDK offers it to handlers only through the session proxy."""
        stack = _connection_stack(ctx)
        if stack is None or session_id in self._watched_sessions:
            return
        self._watched_sessions.add(session_id)

        async def end() -> None:
            self._watched_sessions.discard(session_id)
            await self._stop_following({k: t for k, t in self._following.items() if k[0] == session_id})

        stack.push_async_callback(end)

    async def _stop_following(self, follows: dict[tuple[str, str], asyncio.Task[None]]) -> None:
        for key, task in follows.items():
            if self._following.get(key) is task:
                del self._following[key]
            task.cancel()
        await asyncio.gather(*follows.values(), return_exceptions=True)

    async def _listen(self, ctx: Any, params: mt.SubscriptionsListenRequestParams) -> mt.SubscriptionsListenResult:
        """``subscriptions/listen`` (2026-07-28): the named resources followed as ``resources/subscribe`` follows
        them, on one stream that holds one of the credential's seats while it is open (``mcp_listen``)."""
        if ctx.request_id is None:
            raise MCPError(INVALID_REQUEST, "subscriptions/listen needs a request id: its frames carry it")
        uris = list(dict.fromkeys(params.notifications.resource_subscriptions or ()))
        if len(uris) > MAX_SUBSCRIPTIONS:
            raise MCPError(INVALID_PARAMS, f"a listen stream follows at most {MAX_SUBSCRIPTIONS} resources")
        for uri in uris:
            self._followable(uri)  # an unknown or unfollowable resource is refused before any work
        principal, token = _principal_of(ctx), _token_of(ctx) or ""
        seat = None if principal is None else self.seats.take(principal.device_id)
        if seat is None:
            raise MCPError(TOO_MANY_SESSIONS, self.seats.refusal(DEFAULT_SESSION_IDLE_TIMEOUT, listening=True))

        async def start(uri: str) -> Follow:
            watch, op_ctx = await self._start_watch(ctx, token, uri)
            return watch, lambda: self._still_allowed(op_ctx)

        try:
            return await self.listening.serve(ctx, params, uris, start)
        finally:
            self.seats.give_back(seat)

    async def _unsubscribe(self, ctx: Any, params: mt.UnsubscribeRequestParams) -> mt.EmptyResult:
        task = self._following.pop((_session_id(ctx), str(params.uri)), None)
        if task is not None:
            task.cancel()
        return mt.EmptyResult()

    async def _follow(self, key: tuple[str, str], watch: Any, session: Any, op_ctx: OpContext) -> None:
        """Each event of the watch becomes ``notifications/resources/updated``, while the caller still may see it
        (checked again before each: a member who left hears nothing more) and the session still listens."""
        try:
            async for _event in watch:
                if not await self._still_allowed(op_ctx):
                    return
                try:
                    await session.send_resource_updated(key[1])
                except Exception:
                    return  # the session is gone
        finally:
            await watch.aclose()
            if self._following.get(key) is asyncio.current_task():
                del self._following[key]

    async def _still_allowed(self, op_ctx: OpContext) -> bool:
        """By the credential's id, not its token: an OAuth refresh rotates the token of a credential that lives
        on, and the session (bound to the credential) outlives the rotation."""
        assert self._authority is not None and self._dispatcher is not None
        try:
            principal = await self._authority.recheck_device(op_ctx.principal.device_id)
        except HangarError:
            return False
        if op_ctx.workspace_id is None:
            return True
        role = await self._dispatcher.role_in(op_ctx.workspace_id, principal)
        return role is not None and role >= op_ctx.spec.min_role


async def protected_resource(request: Request) -> JSONResponse:
    """OAuth 2.0 protected-resource metadata (RFC 9728): where ``/mcp`` is and who issues its tokens."""
    origin = request.app.state.ctx.settings.origin
    return JSONResponse(
        {
            "resource": f"{origin}{MCP_PATH}",
            "authorization_servers": [origin],
            "bearer_methods_supported": ["header"],
            "resource_name": "Hangar",
        },
        headers={"access-control-allow-origin": "*"},
    )


# Browser-based MCP clients (an inspector page, a web agent) call from their own origin. The endpoint trusts no
# ambient credential (no cookie: the bearer header is the only one), so any origin may call it and read the
# headers the protocol needs; a page still needs a credential someone gave it.
CORS_HEADERS: list[tuple[bytes, bytes]] = [
    (b"access-control-allow-origin", b"*"),
    (b"access-control-expose-headers", b"mcp-session-id, mcp-protocol-version, www-authenticate"),
]
PREFLIGHT_HEADERS: list[tuple[bytes, bytes]] = [
    (b"access-control-allow-methods", b"GET, POST, DELETE, OPTIONS"),
    (
        b"access-control-allow-headers",
        b"authorization, content-type, accept, mcp-session-id, mcp-protocol-version, last-event-id",
    ),
    (b"access-control-max-age", b"600"),
]


def _with_cors(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *CORS_HEADERS]}
        await send(message)

    return sending


async def _preflight(send: Send) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": PREFLIGHT_HEADERS})
    await send({"type": "http.response.body", "body": b""})


APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "title": "Approve", "description": "Let this one call run."}},
    "required": ["approve"],
}


async def _first(name: str, watch: Any) -> Any:
    """A watch's first reply; what is not a ``HangarError`` is logged and answered as an internal error, as the
    dispatcher does for every other op (the exception's text never reaches the caller)."""
    try:
        return await anext(watch)
    except HangarError:
        raise
    except Exception as exc:
        log.exception("op %s failed", name)
        raise HangarError(f"{name} failed with an internal error") from exc


def _resource_error(err: HangarError) -> MCPError:
    body = err.to_dict()
    code = RESOURCE_NOT_FOUND if body["code"] == "not_found" else REFUSED
    return MCPError(code, f"{body['code']}: {body['message']}")


def _asker(ctx: Any) -> Ask | None:
    """An ask-first guardrail becomes a question to the person in their client, where the client can show one
    (it declared elicitation, and this exchange has a way back); otherwise the call stays refused."""
    session = getattr(ctx, "session", None)
    if session is None or not session.check_client_capability(
        mt.ClientCapabilities(elicitation=mt.ElicitationCapability())
    ):
        return None
    scope = getattr(getattr(ctx, "request", None), "scope", None)
    if isinstance(scope, dict) and scope.get(EXCHANGE_KEY):

        async def again(rule: AskFirst) -> bool:
            raise NeedsExchange(rule.message)  # the question needs the SDK's exchange: nothing has run yet

        return again

    async def ask(rule: AskFirst) -> bool:
        message = f"{rule.message.split(' refused: ', 1)[-1]}. Approve this one call?"
        try:
            async with asyncio.timeout(ASK_TIMEOUT_S):
                answer = await session.elicit_form(message, APPROVAL_SCHEMA, related_request_id=ctx.request_id)
        except (NoBackChannelError, MCPError, TimeoutError, ValueError):
            return False  # no way to ask, a client that failed to answer, or no answer in time: still refused
        return answer.action == "accept" and (answer.content or {}).get("approve") is True

    return ask


Progress = Callable[[str], Awaitable[None]]
HEARTBEAT_S = 1.0


@contextlib.asynccontextmanager
async def _progress(ctx: Any, params: mt.CallToolRequestParams, name: str) -> AsyncIterator[Progress | None]:
    """When the client asked for progress (``_meta.progressToken``): a notification every second while the op
    runs, carrying what the op last reported, and one at once for each report. Otherwise nothing is sent."""
    token = (params.meta or {}).get("progress_token")
    session = getattr(ctx, "session", None)
    if token is None or session is None:
        yield None
        return
    sent, said = 0, ["working"]
    loop = asyncio.get_running_loop()
    started = loop.time()

    async def send() -> None:
        nonlocal sent
        sent += 1  # progress only grows, as the protocol asks; there is no total to announce
        message = f"{name}: {said[0]} ({loop.time() - started:.0f} s)"
        with contextlib.suppress(Exception):  # a client that went away stops hearing; the op goes on
            await session.send_progress_notification(
                token, float(sent), message=message, related_request_id=ctx.request_id
            )

    async def report(message: str) -> None:
        said[0] = message
        await send()

    async def beat() -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            await send()

    heartbeat = loop.create_task(beat())
    try:
        yield report
    finally:
        heartbeat.cancel()


@contextlib.contextmanager
def _busy(manager: StreamableHTTPSessionManager, session_id: str | None) -> Iterator[bool]:
    """While a call is answered outside the SDK's transport, its session counts as busy as the transport counts
    a request it serves (no idle expiry meanwhile; the countdown starts again after the last). Yields whether
    the session is still served (not ended, not expiring); a sessionless call always is. The SDK (2.3.0) keeps
    the transports and their count of requests in flight to itself."""
    if session_id is None:
        yield True
        return
    transport = manager._server_instances.get(session_id)
    idle = None if transport is None else transport.idle_scope
    timeout = None if transport is None else transport._idle_timeout
    if transport is None or transport.is_terminated or (idle is not None and idle.cancel_called):
        yield False
        return
    if idle is None or timeout is None:
        yield True
        return
    transport._requests_in_flight += 1
    idle.deadline = math.inf
    try:
        yield True
    finally:
        transport._requests_in_flight -= 1
        if not transport._requests_in_flight:
            idle.deadline = anyio.current_time() + timeout


def _connection(ctx: Any) -> Any:
    """The SDK's connection (for a stateful client: its session) a request belongs to. The SDK offers it to
    lowlevel handlers and middleware only through the session proxy."""
    return getattr(getattr(ctx, "session", None), "_connection", None)


def _connection_stack(ctx: Any) -> contextlib.AsyncExitStack | None:
    """The exit stack of the connection a request belongs to: it unwinds when the connection ends."""
    stack = getattr(_connection(ctx), "exit_stack", None)
    return stack if isinstance(stack, contextlib.AsyncExitStack) else None


def _session_id(ctx: Any) -> str:
    """The MCP session the request belongs to (empty for a sessionless request)."""
    scope = getattr(getattr(ctx, "request", None), "scope", None)
    return (_header(scope, MCP_SESSION_ID_HEADER.lower().encode()) or "") if isinstance(scope, dict) else ""


def _reaches(principal: Principal, spec: OpSpec | None) -> bool:
    if spec is None:
        return False
    workspace_id = principal.workspace_id if spec.scope == "workspace" else None
    try:
        principal.check_reach(workspace_id, changes=spec.mutating, action=spec.name)
    except Forbidden:
        return False
    return True


def _principal_of(ctx: Any) -> Principal | None:
    """The caller as the gate authenticated the very HTTP request the SDK is serving (so the dispatcher need not
    check the same credential twice within one request)."""
    scope = getattr(getattr(ctx, "request", None), "scope", None)
    found = scope.get(PRINCIPAL_KEY) if isinstance(scope, dict) else None
    return found if isinstance(found, Principal) else None


def _token_of(ctx: Any) -> str | None:
    """The caller's credential, as the gate put it on the request the SDK is serving."""
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None)
    if isinstance(scope, dict):
        user = scope.get("user")
        if isinstance(user, AuthenticatedUser):
            return user.access_token.token
        return _bearer(scope)
    return None


def _tool_error(err: HangarError) -> mt.CallToolResult:
    body = err.to_dict()
    return mt.CallToolResult(
        content=[mt.TextContent(text=f"{body['code']}: {body['message']}")],
        structured_content={"error": body},
        is_error=True,
    )


def _rpc_error(message: str, code: int = INVALID_REQUEST, request_id: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _request_id(body: bytes) -> Any:
    message = json.loads(body)
    found = message.get("id") if isinstance(message, dict) else None
    return found if isinstance(found, (str, int)) else None


def _is_initialize(body: bytes) -> bool:
    try:
        message = json.loads(body)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("method") == "initialize"
