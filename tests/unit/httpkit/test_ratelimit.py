"""The token buckets of ``hangar.httpkit.ratelimit`` on an injected clock, on both sides of each line: a burst of N is
N attempts and not one more, and the refill is ``per_minute`` tokens a minute, not a second."""

from __future__ import annotations

import pytest

from hangar.httpkit.ratelimit import Budget, RateLimits, TooManyAttempts

BUDGET = Budget(burst=5, per_minute=15, what="tries")  # a token every 4 s (times chosen exact in binary)


class Clock:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


def limits() -> tuple[RateLimits, Clock]:
    clock = Clock()
    return RateLimits(clock, {"k": BUDGET}), clock


def test_the_burst_allows_exactly_its_size() -> None:
    buckets, _clock = limits()
    assert [buckets.take("k", "a") for _ in range(BUDGET.burst)] == [0.0] * BUDGET.burst
    assert buckets.take("k", "a") == 4.0  # one past the burst: the wait for the next token
    with pytest.raises(TooManyAttempts, match="too many tries; retry in 4 s") as refused:
        buckets.refuse_unless_free("k", "a", "a")
    assert refused.value.http_headers() == {"Retry-After": "4"}
    assert buckets.take("k", "b") == 0.0  # another client has its own bucket


def test_the_bucket_refills_at_its_rate_per_minute() -> None:
    buckets, clock = limits()
    for _ in range(BUDGET.burst):
        buckets.take("k", "a")
    clock.now += 3.5  # short of one token (15 a minute: one every 4 s)
    assert buckets.take("k", "a") == 0.5
    clock.now += 0.5
    assert buckets.take("k", "a") == 0.0  # the token that came at 4 s
    assert buckets.take("k", "a") > 0
    clock.now += 12.0  # a fifth of a minute: three tokens, not more
    assert [buckets.take("k", "a") for _ in range(3)] == [0.0] * 3
    assert buckets.take("k", "a") > 0
    clock.now += 3600.0  # never more than the burst, however long the wait
    assert [buckets.take("k", "a") for _ in range(BUDGET.burst)] == [0.0] * BUDGET.burst
    assert buckets.take("k", "a") > 0


def test_a_token_given_back_is_free_again_and_a_full_bucket_stays_full() -> None:
    buckets, _clock = limits()
    for _ in range(BUDGET.burst):
        buckets.take("k", "a")
    buckets.give_back("k", "a")
    assert buckets.take("k", "a") == 0.0
    assert buckets.take("k", "a") > 0
    buckets.give_back("k", "b")  # nothing taken: nothing to give back beyond the burst
    assert [buckets.take("k", "b") for _ in range(BUDGET.burst)] == [0.0] * BUDGET.burst
    assert buckets.take("k", "b") > 0
