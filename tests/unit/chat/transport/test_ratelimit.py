"""Pacing, 429 cooldowns and retries, on a FakeClock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError

from hangar.chat.providers.slack.ratelimit import BURST, OTHER_RETRIES, RateLimiter, max_retries, retry_after_of
from hangar.core.clock import FakeClock


class Response:
    """The part of an SDK response the limiter reads."""

    def __init__(self, status: int, error: str, retry_after: str | None) -> None:
        self.status_code = status
        self.data = {"ok": False, "error": error}
        self.headers = {"Retry-After": retry_after} if retry_after is not None else {}

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)


def limited(retry_after: str | None = "3") -> SlackApiError:
    return SlackApiError("rate limited", Response(429, "ratelimited", retry_after))


class Script:
    """A call that fails with the given errors first, then answers ``ok``; records the clock time of each try."""

    def __init__(self, clock: FakeClock, *errors: Exception) -> None:
        self.clock, self.errors, self.times = clock, list(errors), list[float]()

    async def __call__(self) -> str:
        self.times.append(self.clock.monotonic())
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


async def settle(clock: FakeClock, sleepers: int = 1) -> None:
    async with asyncio.timeout(5):
        while clock.pending_sleepers < sleepers:
            await asyncio.sleep(0)


def test_retry_after_reading() -> None:
    assert retry_after_of(limited("7")) == 7
    assert retry_after_of(limited(None)) == 30
    assert retry_after_of(SlackApiError("no", Response(200, "invalid_auth", None))) is None
    assert max_retries("chat.appendStream") is None and max_retries("apps.connections.open") == 0
    assert max_retries("users.info") == OTHER_RETRIES


async def test_reply_methods_retry_without_a_cap() -> None:
    clock = FakeClock()
    limiter = RateLimiter(clock)
    call = Script(clock, *[limited("2") for _ in range(10)])
    task = asyncio.create_task(limiter.run("chat.appendStream", call))
    for _ in range(10):
        await settle(clock)
        clock.advance(2)
    assert await task == "ok"
    assert call.times == [1000.0 + 2 * n for n in range(11)]


async def test_other_methods_give_up_and_the_socket_url_is_not_retried() -> None:
    clock = FakeClock()
    limiter = RateLimiter(clock)
    call = Script(clock, *[limited("1") for _ in range(5)])
    task = asyncio.create_task(limiter.run("users.info", call))
    for _ in range(OTHER_RETRIES):
        await settle(clock)
        clock.advance(1)
    with pytest.raises(SlackApiError):
        await task
    assert len(call.times) == OTHER_RETRIES + 1
    once = Script(clock, limited("5"))
    with pytest.raises(SlackApiError):
        await limiter.run("apps.connections.open", once)
    assert limiter.cooldown_left("apps.connections.open") == 5


async def test_a_429_closes_the_method_for_its_other_calls() -> None:
    clock = FakeClock()
    limiter = RateLimiter(clock)
    first = Script(clock, limited("4"))
    task = asyncio.create_task(limiter.run("chat.update", first))
    await settle(clock)
    other = Script(clock)
    waiting = asyncio.create_task(limiter.run("chat.update", other))
    unrelated = await limiter.run("chat.postEphemeral", Script(clock))  # another method is not held
    assert unrelated == "ok"
    await settle(clock, 2)
    assert other.times == []
    clock.advance(4)
    assert await task == "ok" and await waiting == "ok"
    assert other.times == [1004.0]


async def test_pacing_lets_a_burst_through_then_spaces_calls_by_the_tier() -> None:
    clock = FakeClock()
    limiter = RateLimiter(clock, per_minute={"conversations.info": 50.0})
    calls = [Script(clock) for _ in range(int(BURST) + 2)]
    for call in calls[: int(BURST)]:
        await limiter.run("conversations.info", call)
    late = asyncio.create_task(limiter.run("conversations.info", calls[-2]))
    await settle(clock)
    clock.advance(60 / 50 - 0.01)
    await asyncio.sleep(0)
    assert calls[-2].times == []
    clock.advance(0.01)
    await late
    assert calls[-2].times == [pytest.approx(1000 + 60 / 50)]
    assert all(c.times == [1000.0] for c in calls[: int(BURST)])


async def test_unpaced_methods_never_wait() -> None:
    clock = FakeClock()
    limiter = RateLimiter(clock)
    for _ in range(100):
        await limiter.run("auth.test", Script(clock))
    assert clock.pending_sleepers == 0
