"""How a review's calls to GitHub are retried: which answers are tried again, after how long, and where the
waiting stops (``hangar.forges.github_reviews``), each limit on both sides."""

from __future__ import annotations

import time

import httpx
import pytest
from githubkit.exception import RequestFailed
from githubkit.response import Response

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
    assert _wait_or_raise(at_limit, 1, "post a review", "github.com") == MAX_RATE_WAIT_S
    past = failed(429, **{"retry-after": str(int(MAX_RATE_WAIT_S) + 1)})
    with pytest.raises(Unavailable, match=r"github\.com rate-limits this forge connection until .*: could not post"):
        _wait_or_raise(past, 1, "post a review", "github.com")


def test_a_5xx_backs_off_and_the_last_try_gives_up() -> None:
    assert [_wait_or_raise(failed(502), n, "x", "h") for n in range(1, MAX_TRIES)] == [
        BACKOFF_S * 2**k for k in range(MAX_TRIES - 1)
    ]
    with pytest.raises(RequestFailed):
        _wait_or_raise(failed(502), MAX_TRIES, "x", "h")
    with pytest.raises(RequestFailed):  # not retried at all
        _wait_or_raise(failed(404), 1, "x", "h")


@pytest.mark.parametrize(("failures", "succeeds"), [(MAX_TRIES - 1, True), (MAX_TRIES, False)])
async def test_retrying_tries_max_tries_times_in_all(failures: int, succeeds: bool) -> None:
    calls: list[int] = []
    waits: list[float] = []

    async def call() -> str:
        calls.append(1)
        if len(calls) <= failures:
            raise failed(503)
        return "done"

    async def sleep(s: float) -> None:
        waits.append(s)

    if succeeds:
        assert await retrying("list the files", "github.com", call, sleep) == "done"
    else:
        with pytest.raises(Unavailable, match=r"github.com failed to list the files \(503: m\)"):
            await retrying("list the files", "github.com", call, sleep)
    assert len(calls) == min(failures + 1, MAX_TRIES) and len(waits) == len(calls) - 1
