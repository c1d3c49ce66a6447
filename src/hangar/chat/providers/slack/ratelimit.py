"""Pace Web API calls per method and wait out the provider's 429s on the injected clock.

Slack limits each Web API method per workspace and app: a "tier" gives a per-minute budget, and past it the
provider answers HTTP 429 with ``Retry-After`` (seconds). Three rules here:

- pacing: every method draws from its own token bucket (refilled at its tier's per-minute rate, a burst of
  ``BURST`` allowed as Slack tolerates short bursts), so a busy turn slows down instead of collecting 429s;
- cooldown: after a 429 the method is closed until ``Retry-After`` has passed, so other calls of that method
  wait instead of hitting the same wall;
- retries: a call that carries a reply (post, update, ephemeral, the stream calls) is retried after every 429
  for as long as it takes (a reply is never dropped); other calls are retried a few times, and
  ``apps.connections.open`` not at all (the connection supervisor waits it out itself so it can be stopped and
  shows its state meanwhile).

All waiting is ``clock.sleep`` so tests move time with ``FakeClock.advance``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from hangar.core.clock import Clock

if TYPE_CHECKING:
    from slack_sdk.errors import SlackApiError

log = logging.getLogger(__name__)

T = TypeVar("T")

# Per-minute budgets of Slack's rate-limit tiers ("Tier 1: 1+ per minute" ... "Tier 4: 100+ per minute"), from
# Slack's Web API rate limits page (docs.slack.dev/apis/web-api/rate-limits) and each method's reference page,
# which names its tier. The SDK carries no tier data. ``None``: not paced here (a "special" method whose limit is
# far above our use, or one the supervisor's backoff already paces).
TIER_1, TIER_2, TIER_3, TIER_4 = 1.0, 20.0, 50.0, 100.0
PER_MINUTE: dict[str, float | None] = {
    "auth.test": None,  # special: thousands per minute
    "apps.connections.open": None,  # Tier 1, but dialled only by the reconnect backoff, which paces it
    "users.info": TIER_4,
    "conversations.info": TIER_3,
    "chat.postMessage": 60.0,  # special: about one message per second per channel
    "chat.update": TIER_3,
    "chat.postEphemeral": TIER_4,
    "chat.startStream": TIER_4,
    "chat.appendStream": TIER_4,
    "chat.stopStream": TIER_4,
    "assistant.threads.setStatus": TIER_4,
    "assistant.threads.setTitle": TIER_4,
    "tooling.tokens.rotate": TIER_1,
    "apps.manifest.create": TIER_1,
    "apps.manifest.update": TIER_1,
    "apps.manifest.export": TIER_3,
    "apps.manifest.validate": TIER_3,
}
DEFAULT_PER_MINUTE = TIER_2  # a method missing from the table is paced like the common middle tier
BURST = 10.0  # calls a method may make at once before pacing starts

# Calls whose loss would drop (part of) a reply: retried after every 429 without a cap.
REPLY_METHODS: frozenset[str] = frozenset(
    {
        "chat.postMessage",
        "chat.update",
        "chat.postEphemeral",
        "chat.startStream",
        "chat.appendStream",
        "chat.stopStream",
    }
)
OTHER_RETRIES = 2
NO_RETRY: frozenset[str] = frozenset({"apps.connections.open"})
DEFAULT_RETRY_AFTER = 30.0  # Slack always sends Retry-After with a 429; this covers a proxy that drops it


def retry_after_of(error: SlackApiError) -> float | None:
    """The wait a 429 asks for, or None when ``error`` is not a rate limit."""
    response = error.response
    if response.status_code != 429 and response.get("error") != "ratelimited":
        return None
    raw = (response.headers or {}).get("Retry-After") or (response.headers or {}).get("retry-after")
    try:
        return max(0.0, float(raw)) if raw is not None else DEFAULT_RETRY_AFTER
    except ValueError:
        return DEFAULT_RETRY_AFTER


def max_retries(method: str) -> int | None:
    """How many 429s a call of ``method`` is retried after; None: no cap."""
    if method in REPLY_METHODS:
        return None
    return 0 if method in NO_RETRY else OTHER_RETRIES


@dataclass
class _Bucket:
    tokens: float
    stamp: float


class RateLimiter:
    """One per Web API client (one app and workspace): the buckets and cooldowns of its methods."""

    def __init__(self, clock: Clock, *, per_minute: dict[str, float | None] | None = None) -> None:
        self._clock = clock
        self._per_minute = PER_MINUTE if per_minute is None else per_minute
        self._buckets: dict[str, _Bucket] = {}
        self._closed_until: dict[str, float] = {}

    def cooldown_left(self, method: str) -> float:
        return max(0.0, self._closed_until.get(method, 0.0) - self._clock.monotonic())

    async def run(self, method: str, call: Callable[[], Awaitable[T]]) -> T:
        """Run ``call`` (one attempt of ``method``) when its turn comes; retry it after 429s per the rules."""
        # Imported here: the SDK's package is heavy, and the server starts without it (``api.provider_error``).
        from slack_sdk.errors import SlackApiError

        cap = max_retries(method)
        retried = 0
        while True:
            await self._turn(method)
            try:
                return await call()
            except SlackApiError as e:
                wait = retry_after_of(e)
                if wait is None:
                    raise
                self._closed_until[method] = max(self._closed_until.get(method, 0.0), self._clock.monotonic() + wait)
                if cap is not None and retried >= cap:
                    raise
                retried += 1
                log.info("%s rate limited; retrying in %.1f s (attempt %d)", method, wait, retried + 1)

    async def _turn(self, method: str) -> None:
        rate = self._per_minute.get(method, DEFAULT_PER_MINUTE)
        while True:
            closed = self.cooldown_left(method)
            if closed > 0:
                await self._clock.sleep(closed)
                continue
            if rate is None:
                return
            now = self._clock.monotonic()
            bucket = self._buckets.setdefault(method, _Bucket(BURST, now))
            bucket.tokens = min(BURST, bucket.tokens + (now - bucket.stamp) * rate / 60.0)
            bucket.stamp = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return
            await self._clock.sleep((1.0 - bucket.tokens) * 60.0 / rate)
