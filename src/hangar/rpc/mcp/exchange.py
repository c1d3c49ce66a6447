"""A tool call answered in one exchange: the SDK's request kernel without its per-request transport.

Most tool calls ask for no progress and cannot be asked a question; for them the SDK's transports cost several
times the call itself (a session request crosses memory streams and task groups into an SSE answer; a sessionless
one builds a transport and a server task per request). Such a call is served here by the SDK's own single-request
kernel, ``mcp.server.runner.serve_one`` (the server's middleware, the protocol revision's validation of the
request, our handler, the revision's shaping of the result), with a born-ready connection carrying what the
session negotiated, and answered as plain JSON, which Streamable HTTP lets a server answer any POST with. The gate
has authenticated the caller as for every request; the handler goes through the one dispatcher. A call in a
session can be cancelled as any (``notifications/cancelled``), and is then answered with the error the SDK's
transport answers a cancelled request with.

Whatever needs more than one exchange goes the SDK's whole way: a call that asked for progress (``_meta``), one
whose op turns out to need an ask-first question in a client that can answer one (``NeedsExchange``: nothing has
run yet, and the request is served again by the SDK), any other method, any header the SDK would judge.

``Exchanges`` is the gate's side of it: which calls may be answered so, and the ones in flight, by session and
request id, for a ``notifications/cancelled`` to reach.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.server.connection import Connection
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_one
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, REQUEST_CANCELLED, check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import DEFAULT_NEGOTIATED_VERSION, INTERNAL_ERROR, ErrorData
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import Scope, Send

from hangar.core.principal import Principal
from hangar.rpc.mcp.sessions import SessionBook, SessionFacts
from hangar.rpc.mcp.wire import answer

log = logging.getLogger(__name__)

EXCHANGE_KEY = "hangar.mcp.exchange"  # on the ASGI scope of a request served here


class NeedsExchange(Exception):
    """The call needs the SDK's whole exchange (a question to the person): serve the request again that way."""


@dataclass
class _OneExchange:
    """The SDK's ``DispatchContext`` for a request answered by one JSON reply: nothing else can ride it."""

    request_id: str | int
    message_metadata: ServerMessageMetadata
    transport: TransportContext
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    can_send_request: bool = False

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None) -> None:
        return None

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        return None


def plain_tool_call(body: bytes) -> dict[str, Any] | None:
    """The JSON-RPC request when the body is one ``tools/call`` that asked for nothing beyond its answer."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or message.get("method") != "tools/call":
        return None
    request_id, params = message.get("id"), message.get("params")
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)) or not isinstance(params, dict):
        return None
    return message if "_meta" not in params else None


def cancelled_request(body: bytes) -> str | int | None:
    """The request a ``notifications/cancelled`` body names."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != "notifications/cancelled":
        return None
    params = message.get("params")
    found = params.get("requestId") if isinstance(params, dict) else None
    return found if isinstance(found, (str, int)) and not isinstance(found, bool) else None


def _accepts(request: Request, *, sse_too: bool) -> bool:
    """Headers the SDK's transport would take (else it answers the refusal): a JSON body, and an Accept naming
    JSON (a session's transport, which may answer with a stream, wants SSE named too)."""
    content_types = [part.strip() for part in request.headers.get("content-type", "").split(";")[0].split(",")]
    has_json, has_sse = check_accept_headers(request)
    return "application/json" in content_types and has_json and (has_sse or not sse_too)


def revision(headers: Headers, facts: SessionFacts | None) -> str | None:
    """The protocol revision to serve at, or None where the SDK must judge the header: in a session, the one it
    negotiated (the client repeats it); sessionless, a handshake-era one or none (the SDK's default then)."""
    sent = headers.get("mcp-protocol-version")
    if facts is not None:
        return facts.protocol_version if sent == facts.protocol_version else None
    if sent is None:
        return DEFAULT_NEGOTIATED_VERSION
    return sent if sent in HANDSHAKE_PROTOCOL_VERSIONS else None


async def serve_call(
    server: Server[Any], scope: Scope, message: dict[str, Any], version: str, facts: SessionFacts | None
) -> dict[str, Any] | None:
    """The JSON-RPC answer to one plain tool call, or None when the headers need the SDK's judgement. Raises
    ``NeedsExchange`` when the call must be served the SDK's whole way after all."""
    request = Request({**scope, EXCHANGE_KEY: True})
    if not _accepts(request, sse_too=facts is not None):
        return None
    connection = Connection.from_envelope(
        version, facts.client_info if facts else None, facts.capabilities if facts else None
    )
    exchange = _OneExchange(
        request_id=message["id"],
        message_metadata=ServerMessageMetadata(request_context=request),
        transport=TransportContext(kind="streamable-http", can_send_request=False, headers=request.headers),
    )
    try:
        result = await serve_one(
            server, exchange, "tools/call", message["params"], connection=connection, lifespan_state={}
        )
    except NeedsExchange:
        raise
    except Exception as exc:
        error = handler_exception_to_error_data(exc)
        if error is None:
            log.exception("tools/call failed")
            error = ErrorData(code=INTERNAL_ERROR, message="Internal server error")
        return {"jsonrpc": "2.0", "id": message["id"], "error": error.model_dump(by_alias=True, exclude_none=True)}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


class Exchanges:
    """The plain tool calls ``server`` answers in one exchange, for the sessions of ``manager`` that ``book`` knows
    and for clients that keep none."""

    def __init__(self, server: Server[Any], manager: StreamableHTTPSessionManager, book: SessionBook) -> None:
        self.server = server
        self.manager = manager
        self.book = book
        self._calls: dict[tuple[str, str | int], asyncio.Future[Any]] = {}  # (session id, request id)

    def cancel(self, body: bytes, session_id: str, principal: Principal) -> None:
        """A ``notifications/cancelled`` for a call being answered in one exchange of this credential's session."""
        request_id = cancelled_request(body)
        call = None if request_id is None else self._calls.get((session_id, request_id))
        if call is not None and self.book.facts(session_id, principal.device_id) is not None:
            call.cancel()

    async def answer(self, scope: Scope, body: bytes, principal: Principal, session_id: str | None, send: Send) -> bool:
        """Answer a plain tool call in one exchange where it may be; False: the SDK serves it. In a session, only
        one this credential opened and the SDK still serves, which counts as busy meanwhile."""
        message = plain_tool_call(body)
        if message is None:
            return False
        facts = None if session_id is None else self.book.facts(session_id, principal.device_id)
        if session_id is not None and facts is None:
            return False
        version = revision(Headers(scope=scope), facts)
        if version is None:
            return False
        with _busy(self.manager, session_id) as live:
            if not live:
                return False
            call = asyncio.ensure_future(serve_call(self.server, scope, message, version, facts))
            key = (session_id, message["id"]) if session_id is not None else None
            if key is not None:
                self._calls[key] = call  # a notifications/cancelled for it can reach it
            try:
                reply = await call
            except NeedsExchange:
                return False
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if not call.cancelled() or (current is not None and current.cancelling()):
                    raise
                # Cancelled by the client: the 2025 revisions end such a request with this error, as the SDK does.
                reply = {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": REQUEST_CANCELLED, "message": "Request cancelled"},
                }
            finally:
                if key is not None and self._calls.get(key) is call:
                    del self._calls[key]
                if not call.done():
                    call.cancel()
        if reply is None:
            return False
        headers = [(MCP_SESSION_ID_HEADER.lower().encode(), session_id.encode())] if session_id else []
        await answer(send, 200, reply, headers)
        return True


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
