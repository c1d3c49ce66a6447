"""How many MCP sessions one device credential may hold open at once.

The SDK bounds the sessions of the whole endpoint (10,000); without a bound per credential, one credential (a
leaked one, a client stuck in a reconnect loop) could open sessions until nobody else can. Every ``initialize``
takes a seat for its credential before the SDK sees it; the seat is held for as long as the session it opened
lives (ended by a DELETE, the idle timeout or the server stopping) and given back at once when the request
opened nothing. A credential whose seats are all taken gets HTTP 429, and nothing else changes. A
``subscriptions/listen`` stream (the 2026-07-28 revision's stand-in for a session that follows resources) holds a
seat while it is open too.

``SessionBook`` is where the door meets the SDK's sessions: it opens them under the cap and keeps what each one's
``initialize`` settled, which a call answered in one exchange (``exchange``) needs in place of the SDK's session.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp.server.streamable_http_manager import DEFAULT_SESSION_IDLE_TIMEOUT, StreamableHTTPSessionManager
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import Receive, Scope, Send

from hangar.core.http import replaying
from hangar.rpc.mcp.request import connection, connection_stack, scope_of
from hangar.rpc.mcp.wire import answer, request_id, rpc_error

MAX_SESSIONS_PER_CREDENTIAL = 64
"""Open MCP sessions one device credential may hold; an agent client keeps one or a few."""
SEAT_KEY = "hangar.mcp.seat"  # where the gate leaves an initialize's seat on the request's ASGI scope
TOO_MANY_SESSIONS = -32000  # the JSON-RPC error of a 429: the credential holds all the sessions it may


@dataclass(eq=False)
class Seat:
    """One ``initialize``'s place under its credential's cap."""

    device_id: str
    opened: bool = False  # the SDK opened a session with it: the session's end gives it back
    given_back: bool = field(default=False, repr=False)


class SessionCap:
    def __init__(self, limit: int = MAX_SESSIONS_PER_CREDENTIAL) -> None:
        if limit < 1:
            raise ValueError("the cap on sessions per credential must be at least 1")
        self.limit = limit
        self._held: dict[str, int] = {}

    def held(self, device_id: str) -> int:
        return self._held.get(device_id, 0)

    def take(self, device_id: str) -> Seat | None:
        """A seat for one ``initialize`` of this credential, or None when it already holds ``limit``."""
        if self.held(device_id) >= self.limit:
            return None
        self._held[device_id] = self.held(device_id) + 1
        return Seat(device_id)

    def give_back(self, seat: Seat) -> None:
        """Free the seat; giving back twice (the request's end and the session's end may both try) is nothing."""
        if seat.given_back:
            return
        seat.given_back = True
        left = self.held(seat.device_id) - 1
        if left > 0:
            self._held[seat.device_id] = left
        else:
            self._held.pop(seat.device_id, None)

    def refusal(self, idle_timeout_s: float, *, listening: bool = False) -> str:
        """Why an ``initialize`` (or a listen stream) was refused, and how the caller makes room."""
        return (
            f"this credential already holds {self.limit} open MCP sessions and listen streams, the most one "
            "credential may hold: end one you no longer use (an HTTP DELETE of /mcp with its Mcp-Session-Id "
            "header, or closing a subscriptions/listen stream) or let a session expire (one with no request for "
            f"{idle_timeout_s / 60:g} minutes ends), then {'listen' if listening else 'initialize'} again"
        )


@dataclass(frozen=True)
class SessionFacts:
    """What a session's ``initialize`` settled, as the SDK's connection for it holds it."""

    device_id: str  # the credential that opened it
    protocol_version: str
    client_info: Any
    capabilities: Any


class SessionBook:
    """The sessions the SDK opens through ``manager``, each holding one of ``seats`` while it lives."""

    def __init__(self, manager: StreamableHTTPSessionManager, seats: SessionCap) -> None:
        self.manager = manager
        self.seats = seats
        self._settled: dict[str, SessionFacts] = {}  # by session id

    async def initialize(self, scope: Scope, body: bytes, receive: Receive, send: Send, device_id: str) -> None:
        """Serve an ``initialize`` under the credential's cap: a 429 when it holds all its seats, else the SDK
        serves it with a seat that the session keeps (``middleware``) or that comes back when nothing opened."""
        seat = self.seats.take(device_id)
        if seat is None:
            refusal = self.seats.refusal(self.manager.session_idle_timeout or DEFAULT_SESSION_IDLE_TIMEOUT)
            await answer(send, 429, rpc_error(refusal, TOO_MANY_SESSIONS, request_id(body)), [])
            return
        try:
            await self.manager.handle_request({**scope, SEAT_KEY: seat}, replaying(body, receive), send)
        finally:
            if not seat.opened:  # nothing was opened (refused, failed, a revision without sessions)
                self.seats.give_back(seat)

    async def middleware(self, ctx: Any, call_next: Any) -> Any:
        """SDK middleware. An ``initialize`` that opens a session keeps its seat until the session ends, and what
        it settled is kept for calls answered in one exchange; the session's connection unwinds its exit stack
        however it ends (DELETE, idle timeout, shutdown, crash), which lets both go."""
        if ctx.method != "initialize":
            return await call_next(ctx)
        scope = scope_of(ctx)
        seat = scope.get(SEAT_KEY) if scope is not None else None
        stack = connection_stack(ctx)
        session_id = getattr(connection(ctx), "session_id", None)
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

    def facts(self, session_id: str, device_id: str) -> SessionFacts | None:
        """What the session settled, when it is one this credential opened and still open."""
        found = self._settled.get(session_id)
        return found if found is not None and found.device_id == device_id else None
