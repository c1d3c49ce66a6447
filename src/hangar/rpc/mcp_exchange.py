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
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.server.connection import Connection
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_one
from mcp.server.streamable_http import REQUEST_CANCELLED, check_accept_headers
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import DEFAULT_NEGOTIATED_VERSION, INTERNAL_ERROR, ErrorData
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import Scope

log = logging.getLogger(__name__)
__all__ = ["REQUEST_CANCELLED", "NeedsExchange", "SessionFacts", "cancelled_request", "plain_tool_call", "serve_call"]

EXCHANGE_KEY = "hangar.mcp.exchange"  # on the ASGI scope of a request served here


class NeedsExchange(Exception):
    """The call needs the SDK's whole exchange (a question to the person): serve the request again that way."""


@dataclass(frozen=True)
class SessionFacts:
    """What a session's ``initialize`` settled, as the SDK's connection for it holds it."""

    device_id: str  # the credential that opened it
    protocol_version: str
    client_info: Any
    capabilities: Any


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
