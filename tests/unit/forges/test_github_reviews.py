"""How a review's calls to GitHub are retried: which answers are tried again, after how long, and where the
waiting stops (``hangar.forges.github_reviews``), each limit on both sides."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import httpx
import pytest
from githubkit.exception import RequestFailed
from githubkit.response import Response

from hangar.core.clock import FakeClock
from hangar.errors import Unavailable
from hangar.forges.github_reviews import BACKOFF_S, MAX_RATE_WAIT_S, MAX_TRIES, _rate_wait, _wait_or_raise, retrying


def failed(status: int, **headers: str) -> RequestFailed:
    request = httpx.Request("GET", "https://api.example.test/repos/acme/app/pulls/7/files")
    return RequestFailed(
        Response(httpx.Response(status, headers=headers, json={"message": "m"}, request=request), object)
    )


def test_rate_limits_name_their_wait() -> None:
    now = time.time()
    assert _rate_wait(failed(429, **{"retry-after": "7"}), now) == 7
    assert _rate_wait(failed(403, **{"retry-after": "7"}), now) == 7
    reset = int(now) + 30
    limited = failed(403, **{"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)})
    assert _rate_wait(limited, now) == reset - now
    # a 403 that is no rate limit (remaining above zero, or no headers), a 500: not waited for
    assert _rate_wait(failed(403, **{"x-ratelimit-remaining": "1", "x-ratelimit-reset": str(reset)}), now) is None
    assert _rate_wait(failed(403), now) is None
    assert _rate_wait(failed(500, **{"retry-after": "7"}), now) is None


def test_a_rate_limit_is_waited_for_up_to_the_limit_and_not_one_second_more() -> None:
    at_limit = failed(429, **{"retry-after": str(int(MAX_RATE_WAIT_S))})
    assert _wait_or_raise(at_limit, 1, "post a review", "github.com", time.time()) == MAX_RATE_WAIT_S
    past = failed(429, **{"retry-after": str(int(MAX_RATE_WAIT_S) + 1)})
    with pytest.raises(Unavailable, match=r"github\.com rate-limits this forge connection until .*: could not post"):
        _wait_or_raise(past, 1, "post a review", "github.com", time.time())


def test_a_5xx_backs_off_and_the_last_try_gives_up() -> None:
    assert [_wait_or_raise(failed(502), n, "x", "h", 0) for n in range(1, MAX_TRIES)] == [
        BACKOFF_S * 2**k for k in range(MAX_TRIES - 1)
    ]
    with pytest.raises(RequestFailed):
        _wait_or_raise(failed(502), MAX_TRIES, "x", "h", 0)
    with pytest.raises(RequestFailed):  # not retried at all
        _wait_or_raise(failed(404), 1, "x", "h", 0)


async def on_the_clock(clock: FakeClock, work: Any) -> Any:
    """Run ``work``, moving the fake clock on whenever it waits: no test sleeps."""
    task = asyncio.ensure_future(work)
    while not task.done():
        await asyncio.sleep(0)
        if clock.pending_sleepers:
            clock.advance(60)
    return task.result()


@pytest.mark.parametrize(("failures", "succeeds"), [(MAX_TRIES - 1, True), (MAX_TRIES, False)])
async def test_retrying_tries_max_tries_times_in_all_waiting_on_the_clock(failures: int, succeeds: bool) -> None:
    calls: list[float] = []
    clock = FakeClock()

    async def call() -> str:
        calls.append(clock.monotonic())
        if len(calls) <= failures:
            raise failed(503)
        return "done"

    if succeeds:
        assert await on_the_clock(clock, retrying("list the files", "github.com", call, clock)) == "done"
    else:
        with pytest.raises(Unavailable, match=r"github.com failed to list the files \(503: m\)"):
            await on_the_clock(clock, retrying("list the files", "github.com", call, clock))
    assert len(calls) == min(failures + 1, MAX_TRIES)
    assert all(later > earlier for earlier, later in itertools.pairwise(calls))  # each try after a wait
