"""How many MCP sessions one device credential may hold open at once.

The SDK bounds the sessions of the whole endpoint (10,000); without a bound per credential, one credential (a
leaked one, a client stuck in a reconnect loop) could open sessions until nobody else can. Every ``initialize``
takes a seat for its credential before the SDK sees it; the seat is held for as long as the session it opened
lives (ended by a DELETE, the idle timeout or the server stopping) and given back at once when the request
opened nothing. A credential whose seats are all taken gets HTTP 429, and nothing else changes. A
``subscriptions/listen`` stream (the 2026-07-28 revision's stand-in for a session that follows resources) holds a
seat while it is open too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_SESSIONS_PER_CREDENTIAL = 64
"""Open MCP sessions one device credential may hold; an agent client keeps one or a few."""


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
