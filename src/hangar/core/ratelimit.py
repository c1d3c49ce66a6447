"""Attempts per client: pairing codes and sign-ins are guessable secrets, so each client (by its address) gets
a token bucket per kind of attempt. Past it the route answers 429 with ``Retry-After`` (``TooManyAttempts``) and
the refusal is logged; the handler behind never runs.

Buckets live in the process that answers: each server process limits what reaches it, which bounds guessing
by the number of processes, with nothing shared to keep consistent.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from hangar.errors import Refused

log = logging.getLogger("hangar.ratelimit")

Handler = Callable[[Request], Awaitable[Response]]
MAX_CLIENTS = 10_000  # buckets kept per kind; the oldest go first


class TooManyAttempts(Refused):
    http_status = 429

    def __init__(self, kind: str, retry: int) -> None:
        super().__init__(f"too many {kind} attempts; retry in {retry} s")
        self.retry = retry

    def http_headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry)}


@dataclass(frozen=True)
class Budget:
    burst: int  # attempts at once
    per_minute: float  # refill


BUDGETS: dict[str, Budget] = {
    "pair": Budget(burst=20, per_minute=20),
    "signin": Budget(burst=30, per_minute=30),
    "register": Budget(burst=10, per_minute=10),  # OAuth client registrations: anonymous, so few per address
}


class RateLimits:
    """Provided as a service by the server; one per process."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.budgets = dict(BUDGETS)
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}  # (kind, client) -> (tokens, at)

    def take(self, kind: str, client: str) -> float:
        """0 when the attempt may go on; else the seconds until the next one may."""
        budget = self.budgets[kind]
        now = self._clock()
        tokens, at = self._buckets.pop((kind, client), (float(budget.burst), now))
        tokens = min(float(budget.burst), tokens + (now - at) * budget.per_minute / 60)
        if len(self._buckets) >= MAX_CLIENTS * len(self.budgets):
            self._buckets.pop(next(iter(self._buckets)))
        if tokens < 1:
            self._buckets[(kind, client)] = (tokens, now)
            return (1 - tokens) * 60 / budget.per_minute
        self._buckets[(kind, client)] = (tokens - 1, now)
        return 0.0


def rate_limited(kind: str, handler: Handler) -> Handler:
    """``handler`` behind the ``kind`` bucket of the calling client."""

    @functools.wraps(handler)  # the reference pages read the handler's docstring
    async def guarded(request: Request) -> Response:
        limits: RateLimits | None = request.app.state.ctx.maybe_service(RateLimits)
        client = request.client.host if request.client else "unknown"
        wait = limits.take(kind, client) if limits is not None else 0.0
        if wait > 0:
            retry = max(1, math.ceil(wait))
            log.warning("rate limit: %s attempts from %s refused for %d s", kind, client, retry)
            raise TooManyAttempts(kind, retry)
        return await handler(request)

    return guarded
