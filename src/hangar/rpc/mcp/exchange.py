"""The hot path for ``tools/call``: a plain tool call answered in one exchange, without the SDK's per-request
transport and request kernel, keeping the SDK's protocol types for what the call is and what it answers.

Most tool calls ask for no progress and cannot be asked a question; for them the SDK's machinery costs several
times the call itself (a session request crosses memory streams and task groups into an SSE answer; a sessionless
one builds a transport and a server task per request; either then builds a connection, a session proxy, a context,
tracing spans and cancel scopes around the handler). Such a call is served here, after the gate authenticated its
credential as for every request: the protocol revision's own validation of the request (the SDK's
``validate_client_request`` and its ``CallToolRequestParams``), the same op through the same dispatcher as the
SDK's handler (``ToolCalls.call_plain``), the revision's shaping of the result (``serialize_server_result``), and
the answer written as the SDK writes it (its ``JSONRPCResponse``/``JSONRPCError`` models, dumped as its transport
dumps them), as plain JSON, which Streamable HTTP lets a server answer any POST with. Errors take the SDK's codes
and words: an unknown tool ``-32602`` with the handler's message, params the revision refuses ``-32602``
"Invalid request parameters". A call in a session can be cancelled as any (``notifications/cancelled``), and is
then answered with the error the SDK's transport answers a cancelled request with.

Whatever needs more than this goes the SDK's whole way, unchanged: a call that carries ``_meta`` (progress), one
whose op turns out to need an ask-first question in a client that can answer one (``NeedsExchange``: nothing has
run yet, and the request is served again by the SDK), a session this credential did not open or that ended, a
protocol version header the SDK must judge, headers it would refuse, batches, notifications and every other
method, and the 2026-07-28 revision. The SDK's middleware and tracing spans do not see a call served here.

``Exchanges`` is the gate's side of it: which calls may be answered so, and the ones in flight, by session and
request id, for a ``notifications/cancelled`` to reach.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import mcp.types as mt
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, REQUEST_CANCELLED, check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    ErrorData,
    JSONRPCError,
    JSONRPCResponse,
)
from mcp_types.methods import serialize_server_result, validate_client_request
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import Scope, Send

from hangar.core.principal import Principal
from hangar.rpc.dispatcher import Ask
from hangar.rpc.guardrails import AskFirst
from hangar.rpc.mcp.ops import Caller
from hangar.rpc.mcp.sessions import SessionBook, SessionFacts
from hangar.rpc.mcp.tool_calls import ToolCalls
from hangar.rpc.mcp.wire import send_json

log = logging.getLogger(__name__)

METHOD = "tools/call"


class NeedsExchange(Exception):
    """The call needs the SDK's whole exchange (a question to the person): serve the request again that way."""


async def _ask_again(rule: AskFirst) -> bool:
    raise NeedsExchange(rule.message)  # the question needs the SDK's exchange: nothing has run yet


def plain_tool_call(body: bytes) -> dict[str, Any] | None:
    """The JSON-RPC request when the body is one ``tools/call`` that asked for nothing beyond its answer."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or message.get("method") != METHOD:
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


def _dumped(message: JSONRPCResponse | JSONRPCError) -> bytes:
    """The answer's bytes as the SDK's transport writes them."""
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode()


async def serve_call(tools: ToolCalls, caller: Caller, params: Any, version: str) -> bytes:
    """The JSON-RPC answer to one plain tool call, as the SDK's kernel would answer it. Raises ``NeedsExchange``
    when the call must be served the SDK's whole way after all."""
    try:
        try:
            validate_client_request(METHOD, version, params)
        except KeyError:  # not a method of this revision (the SDK's version gate)
            raise MCPError(code=METHOD_NOT_FOUND, message="Method not found", data=METHOD) from None
        typed = mt.CallToolRequestParams.model_validate(params, by_name=False)
        result = await tools.call_plain(caller, typed)
        try:
            shaped = serialize_server_result(METHOD, version, result)
        except ValidationError:
            log.exception("tools/call returned an invalid result")
            raise MCPError(code=INTERNAL_ERROR, message="Handler returned an invalid result") from None
    except NeedsExchange:
        raise
    except Exception as exc:
        error = handler_exception_to_error_data(exc)
        if error is None:
            log.exception("tools/call failed")
            error = ErrorData(code=INTERNAL_ERROR, message="Internal server error")
        return _dumped(JSONRPCError(jsonrpc="2.0", id=caller.request_id, error=error))
    # Built without validating again what the revision's shaping just validated.
    return _dumped(JSONRPCResponse.model_construct(jsonrpc="2.0", id=caller.request_id, result=shaped))


def _asker(facts: SessionFacts | None) -> Ask | None:
    """A client that declared it can be asked (elicitation) gets an ask-first question on the SDK's whole
    exchange; one that cannot is refused, as from the SDK's handler."""
    return _ask_again if facts is not None and facts.can_ask else None


class Exchanges:
    """The plain tool calls ``tools`` answers in one exchange, for the sessions of ``manager`` that ``book`` knows
    and for clients that keep none."""

    def __init__(self, tools: ToolCalls, manager: StreamableHTTPSessionManager, book: SessionBook) -> None:
        self.tools = tools
        self.manager = manager
        self.enabled = True  # False: every call goes the SDK's way (tests compare the two answers)
        self.book = book
        self._calls: dict[tuple[str, str | int], _InFlight] = {}  # (session id, request id)

    def cancel(self, body: bytes, session_id: str, principal: Principal) -> None:
        """A ``notifications/cancelled`` for a call being answered in one exchange of this credential's session."""
        request_id = cancelled_request(body)
        call = None if request_id is None else self._calls.get((session_id, request_id))
        if call is not None and self.book.facts(session_id, principal.device_id) is not None:
            call.cancel()

    async def answer(
        self, scope: Scope, body: bytes, token: str, principal: Principal, session_id: str | None, send: Send
    ) -> bool:
        """Answer a plain tool call in one exchange where it may be; False: the SDK serves it. In a session, only
        one this credential opened and the SDK still serves, which counts as busy meanwhile."""
        message = plain_tool_call(body) if self.enabled else None
        if message is None:
            return False
        facts = None if session_id is None else self.book.facts(session_id, principal.device_id)
        if session_id is not None and facts is None:
            return False
        request = Request(scope)
        version = revision(request.headers, facts)
        if version is None or not _accepts(request, sse_too=facts is not None):
            return False
        caller = Caller(token, principal, message["id"], _asker(facts))
        with _busy(self.manager, session_id) as live:
            if not live:
                return False
            if session_id is None:  # nothing can cancel it but the client going away
                try:
                    answered = await serve_call(self.tools, caller, message["params"], version)
                except NeedsExchange:
                    return False
                await send_json(send, 200, answered, [])
                return True
            reply = await self._cancellable(session_id, caller, message["params"], version)
        if reply is None:
            return False
        await send_json(send, 200, reply, [(MCP_SESSION_ID_HEADER.lower().encode(), session_id.encode())])
        return True

    async def _cancellable(self, session_id: str, caller: Caller, params: Any, version: str) -> bytes | None:
        """``serve_call`` in the request's own task (a task per call costs a turn of the loop), which a
        ``notifications/cancelled`` for it cancels; None: the SDK serves it after all."""
        task = asyncio.current_task()
        assert task is not None
        flight = _InFlight(task)
        key = (session_id, caller.request_id)
        self._calls[key] = flight  # a notifications/cancelled for it can reach it
        try:
            return await serve_call(self.tools, caller, params, version)
        except NeedsExchange:
            return None
        except asyncio.CancelledError:
            # Only the client's own cancel is answered; any other (the client gone, the server stopping) goes on.
            if not flight.cancelled:
                raise
            flight.cancelled = False
            if task.uncancel() > 0:
                raise
            # Cancelled by the client: the 2025 revisions end such a request with this error, as the SDK does.
            error = ErrorData(code=REQUEST_CANCELLED, message="Request cancelled")
            return _dumped(JSONRPCError(jsonrpc="2.0", id=caller.request_id, error=error))
        finally:
            if self._calls.get(key) is flight:
                del self._calls[key]
            if flight.cancelled:  # asked for when the op was done, or swallowed by it: nothing left to cancel
                task.uncancel()


@dataclass
class _InFlight:
    """A call answered in one exchange of a session, in its request's task, for a ``notifications/cancelled``."""

    task: asyncio.Task[Any]
    cancelled: bool = False

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            self.task.cancel()


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
            idle.deadline = asyncio.get_running_loop().time() + timeout  # anyio's clock on asyncio
