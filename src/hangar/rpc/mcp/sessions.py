"""How many MCP sessions a credential, a user and a workspace may hold open at once, and expiring idle sessions
sooner when the endpoint fills up.

The SDK bounds the sessions of the whole endpoint (10,000); past it every ``initialize`` gets 503. Without bounds
below it, one credential (a leaked one, a client stuck in a reconnect loop), one person minting credentials, or
one workspace's agents could open sessions until nobody else can. So every ``initialize`` takes a seat before the
SDK sees it, counted three ways (``limits.SeatLimits``): for its credential (64 by default), for the user behind
it, all their credentials together (256), and, for a credential limited to one workspace (an OAuth grant for
it, an agent's credential), for that workspace (1,000). The seat is held for as long as the session it opened
lives (ended by a DELETE, the idle timeout or the server stopping) and given back at once when the request
opened nothing. An ``initialize`` that finds any of its caps full gets HTTP 429 naming it, and nothing else
changes. A ``subscriptions/listen`` stream (the 2026-07-28 revision's stand-in for a session that follows
resources) holds a seat while it is open too.

Under pressure (half the endpoint's bound open, ``limits.PRESSURE_SHARE``) sessions with no request in flight
expire after ``PRESSURE_IDLE_S`` (2 minutes) without a request instead of the SDK's 30 minutes: each
``initialize`` then brings every idle session's deadline forward.

``SessionBook`` is where the door meets the SDK's sessions: it opens them under the caps and keeps what each one's
``initialize`` settled, which a call answered in one exchange (``exchange``) needs in place of the SDK's session.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp.server.streamable_http_manager import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    StreamableHTTPSessionManager,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import Receive, Scope, Send

from hangar.core.metrics import Metrics
from hangar.core.principal import Principal
from hangar.httpkit.requests import replaying
from hangar.rpc.mcp.limits import PRESSURE_IDLE_S, PRESSURE_SHARE, SeatLimits
from hangar.rpc.mcp.request import connection, connection_stack, scope_of
from hangar.rpc.mcp.wire import answer, request_id, rpc_error

SEAT_KEY = "hangar.mcp.seat"  # where the gate leaves an initialize's seat on the request's ASGI scope
TOO_MANY_SESSIONS = -32000  # the JSON-RPC error of a 429: a cap on sessions is full


@dataclass(eq=False)
class Seat:
    """One ``initialize``'s place under its caps: the keys it counts under."""

    device_id: str
    keys: tuple[tuple[str, str], ...]  # ("credential", id), ("user", id), and ("workspace", id) for a narrow one
    opened: bool = False  # the SDK opened a session with it: the session's end gives it back
    given_back: bool = field(default=False, repr=False)


_WHO = {
    "credential": "this credential already holds {n} open MCP sessions and listen streams, the most one credential "
    "may hold",
    "user": "you already hold {n} open MCP sessions and listen streams across your credentials, the most one person "
    "may hold",
    "workspace": "the credentials limited to this workspace already hold {n} open MCP sessions and listen streams, "
    "the most one workspace's may hold",
}


class SessionCap:
    """The seats taken, per credential, user and workspace, against ``limits``."""

    def __init__(self, limits: SeatLimits) -> None:
        for name, value in vars(limits).items():
            if value < 1:
                raise ValueError(f"the cap on sessions {name.replace('_', ' ')} must be at least 1")
        self.limits = limits
        self._held: Counter[tuple[str, str]] = Counter()

    def _limit(self, kind: str) -> int:
        return {"credential": self.limits.per_credential, "user": self.limits.per_user}.get(
            kind, self.limits.per_workspace
        )

    def held(self, device_id: str) -> int:
        return self._held[("credential", device_id)]

    def held_by(self, kind: str, key: str) -> int:
        return self._held[(kind, key)]

    def take(self, principal: Principal) -> Seat | str:
        """A seat for one ``initialize`` (or listen stream) of ``principal``, or the kind of cap that is full."""
        keys = [("credential", principal.device_id), ("user", principal.user_id)]
        if principal.workspace_id is not None:
            keys.append(("workspace", principal.workspace_id))
        for key in keys:
            if self._held[key] >= self._limit(key[0]):
                return key[0]
        for key in keys:
            self._held[key] += 1
        return Seat(principal.device_id, tuple(keys))

    def give_back(self, seat: Seat) -> None:
        """Free the seat; giving back twice (the request's end and the session's end may both try) is nothing."""
        if seat.given_back:
            return
        seat.given_back = True
        for key in seat.keys:
            self._held[key] -= 1
            if self._held[key] <= 0:
                del self._held[key]

    def refusal(self, full: str, idle_timeout_s: float, *, listening: bool = False) -> str:
        """Why an ``initialize`` (or a listen stream) was refused, and how the caller makes room."""
        return (
            f"{_WHO[full].format(n=self._limit(full))}: end one you no longer use (an HTTP DELETE of /mcp with its "
            "Mcp-Session-Id header, or closing a subscriptions/listen stream) or let a session expire (one with no "
            f"request for {idle_timeout_s / 60:g} minutes ends), then {'listen' if listening else 'initialize'} again"
        )


@dataclass(frozen=True)
class SessionFacts:
    """What a session's ``initialize`` settled, as the SDK's connection for it holds it."""

    device_id: str  # the credential that opened it
    protocol_version: str
    can_ask: bool  # the client declared it can show a question (elicitation)


class SessionBook:
    """The sessions the SDK opens through ``manager``, each holding one of ``seats`` while it lives."""

    def __init__(self, manager: StreamableHTTPSessionManager, seats: SessionCap) -> None:
        self.manager = manager
        self.seats = seats
        self.pressure_idle_s = PRESSURE_IDLE_S
        self.metrics = Metrics(enabled=False)  # the server's, once the door runs (``McpDoor.run``)
        self._settled: dict[str, SessionFacts] = {}  # by session id

    async def initialize(self, scope: Scope, body: bytes, receive: Receive, send: Send, principal: Principal) -> None:
        """Serve an ``initialize`` under the caller's caps: a 429 when one is full, else the SDK serves it with a
        seat that the session keeps (``middleware``) or that comes back when nothing opened."""
        seat = self.seats.take(principal)
        if isinstance(seat, str):
            refusal = self.seats.refusal(seat, self.manager.session_idle_timeout or DEFAULT_SESSION_IDLE_TIMEOUT)
            await answer(send, 429, rpc_error(refusal, TOO_MANY_SESSIONS, request_id(body)), [])
            return
        self.expire_idle_under_pressure()
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
        self.metrics.mcp_session(opened=True)
        stack.callback(self.metrics.mcp_session, False)
        result = await call_next(ctx)
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        params = ctx.params if isinstance(ctx.params, Mapping) else {}
        if isinstance(version, str) and version in HANDSHAKE_PROTOCOL_VERSIONS:
            capabilities = params.get("capabilities")
            can_ask = isinstance(capabilities, Mapping) and capabilities.get("elicitation") is not None
            self._settled[session_id] = SessionFacts(seat.device_id, version, can_ask)
            stack.callback(self._settled.pop, session_id, None)
        return result

    def under_pressure(self) -> bool:
        bound = self.manager.max_sessions or DEFAULT_MAX_SESSIONS
        return len(self.manager._server_instances) >= bound * PRESSURE_SHARE

    def expire_idle_under_pressure(self) -> None:
        """When the endpoint is under pressure, bring every idle session's end forward to ``pressure_idle_s`` after
        its last request. The SDK (2.3.0) keeps its sessions' transports to itself; each transport's idle scope has
        its deadline at the last request's end plus the idle timeout while no request is in flight (infinite while
        one is), which is all this reads and moves."""
        timeout = self.manager.session_idle_timeout
        if timeout is None or not self.under_pressure():
            return
        for transport in list(self.manager._server_instances.values()):
            idle = transport.idle_scope
            if idle is None or idle.cancel_called or math.isinf(idle.deadline):
                continue
            idle.deadline = min(idle.deadline, idle.deadline - timeout + self.pressure_idle_s)

    def facts(self, session_id: str, device_id: str) -> SessionFacts | None:
        """What the session settled, when it is one this credential opened and still open."""
        found = self._settled.get(session_id)
        return found if found is not None and found.device_id == device_id else None
