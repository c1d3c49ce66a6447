"""Attempts per client: what guessing or flooding needs limited, and nothing else.

Each client address (its real one: ``X-Forwarded-For`` counts only from a configured trusted proxy, see
``hangar.server.listeners``; an IPv6 address counts under its /64, ``hangar.core.netaddr``) gets a token bucket per
kind of attempt. Past it the route answers 429 with ``Retry-After`` (``TooManyAttempts``) and the refusal is
logged; the handler behind never runs. Two ways of counting:

- ``failures_limited``: only attempts that fail use up the bucket (a pairing code or a hand-off that does not
  work, a sign-in response that does not verify). Each attempt holds a token while it runs and a success gives it
  back, so guesses made at once cannot overshoot, and any number of people signing in from one address (an
  office behind one NAT, everybody behind one proxy) are never refused for succeeding.
- ``rate_limited``: every attempt counts (anonymous registrations). Starting a sign-in counts too, in its own
  generous bucket (``signin-start``), because each start stores a pending sign-in; a sign-in that completes gives
  its start back (``completes=``), so what the bucket bounds is sign-ins started and never finished.

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
from typing import TYPE_CHECKING

from hangar.core.netaddr import address_key
from hangar.errors import Refused

if TYPE_CHECKING:
    # Named for typing only: every context holds ``RateLimits``, commands' included, which start without Starlette.
    from starlette.requests import Request
    from starlette.responses import Response

log = logging.getLogger("hangar.ratelimit")

Handler = Callable[["Request"], Awaitable["Response"]]
MAX_CLIENTS = 10_000  # buckets kept per kind; the oldest go first


class TooManyAttempts(Refused):
    http_status = 429

    def __init__(self, what: str, retry: int) -> None:
        super().__init__(f"too many {what}; retry in {retry} s")
        self.retry = retry

    def http_headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry)}


@dataclass(frozen=True)
class Budget:
    burst: int  # attempts at once
    per_minute: float  # refill
    what: str = "attempts"  # how a refusal names what was counted


BUDGETS: dict[str, Budget] = {
    "pair": Budget(burst=20, per_minute=20, what="failed pairing attempts from this address"),
    "signin": Budget(burst=30, per_minute=30, what="failed sign-ins from this address"),
    "signin-start": Budget(burst=200, per_minute=60, what="sign-ins started from this address and not finished"),
    "register": Budget(burst=10, per_minute=10, what="registrations from this address"),  # anonymous: few
}


class RateLimits:
    """Token buckets by kind and key (a client address, or whatever a caller counts by); one per process."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, budgets: dict[str, Budget] | None = None) -> None:
        self._clock = clock
        self.budgets = dict(BUDGETS if budgets is None else budgets)
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}  # (kind, key) -> (tokens, at)

    def _level(self, kind: str, key: str) -> tuple[Budget, float, float]:
        budget = self.budgets[kind]
        now = self._clock()
        tokens, at = self._buckets.pop((kind, key), (float(budget.burst), now))
        return budget, min(float(budget.burst), tokens + (now - at) * budget.per_minute / 60), now

    def _keep(self, kind: str, key: str, tokens: float, now: float) -> None:
        if len(self._buckets) >= MAX_CLIENTS * len(self.budgets):
            self._buckets.pop(next(iter(self._buckets)))
        self._buckets[(kind, key)] = (tokens, now)

    def take(self, kind: str, key: str) -> float:
        """0 when the attempt may go on (a token is taken); else the seconds until the next one may."""
        budget, tokens, now = self._level(kind, key)
        if tokens < 1:
            self._keep(kind, key, tokens, now)
            return (1 - tokens) * 60 / budget.per_minute
        self._keep(kind, key, tokens - 1, now)
        return 0.0

    def give_back(self, kind: str, key: str) -> None:
        """Return a token taken for an attempt that turned out not to count."""
        budget, tokens, now = self._level(kind, key)
        if tokens + 1 >= budget.burst:
            return  # a full bucket is no bucket: forget it
        self._keep(kind, key, tokens + 1, now)

    def refuse_unless_free(self, kind: str, key: str, who: str) -> None:
        """Take a token for an attempt by ``who`` (as logged) or raise ``TooManyAttempts``."""
        wait = self.take(kind, key)
        if wait > 0:
            retry = max(1, math.ceil(wait))
            log.warning("rate limit: %s attempts from %s refused for %d s", kind, who, retry)
            raise TooManyAttempts(self.budgets[kind].what, retry)


def client_key(request: Request) -> str:
    """The key a request's client counts under: its address (as the listener resolved it), IPv6 by /64."""
    return address_key(request.client.host) if request.client else "unknown"


def _limits(request: Request) -> RateLimits | None:
    found: RateLimits | None = request.app.state.ctx.maybe_service(RateLimits)
    return found


def rate_limited(kind: str, handler: Handler) -> Handler:
    """``handler`` behind the ``kind`` bucket of the calling client; every attempt counts."""

    @functools.wraps(handler)  # the reference pages read the handler's docstring
    async def guarded(request: Request) -> Response:
        limits = _limits(request)
        if limits is not None:
            key = client_key(request)
            limits.refuse_unless_free(kind, key, key)
        return await handler(request)

    return guarded


def failures_limited(kind: str, handler: Handler, *, completes: str | None = None) -> Handler:
    """``handler`` behind the ``kind`` bucket of the calling client, counting only attempts that fail (an answer
    of 400 or more, or an error). A success gives its token back, and one of ``completes`` (the bucket of the
    starts this attempt finishes) too."""

    @functools.wraps(handler)
    async def guarded(request: Request) -> Response:
        limits = _limits(request)
        if limits is None:
            return await handler(request)
        key = client_key(request)
        limits.refuse_unless_free(kind, key, key)
        response = await handler(request)
        if response.status_code < 400:
            limits.give_back(kind, key)
            if completes is not None:
                limits.give_back(completes, key)
        return response

    return guarded
