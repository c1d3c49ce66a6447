"""The reconnect backoff: exponential from 1 s, full jitter, capped at 30 s."""

from __future__ import annotations

import random

import pytest

from hangar.chat.providers.slack.connection import BACKOFF_CAP_SECONDS, backoff_delay


@pytest.mark.parametrize(
    ("failures", "ceiling"), [(0, 1), (1, 2), (2, 4), (3, 8), (4, 16), (5, 30), (9, 30), (500, 30)]
)
def test_ceiling_doubles_up_to_the_cap(failures: int, ceiling: float) -> None:
    assert backoff_delay(failures, lambda: 1.0) == ceiling
    assert backoff_delay(failures, lambda: 0.0) == 0


def test_full_jitter_spreads_over_the_whole_range() -> None:
    rng = random.Random(7)
    delays = [backoff_delay(6, rng.random) for _ in range(2000)]
    assert all(0 <= d < BACKOFF_CAP_SECONDS for d in delays)
    assert min(delays) < 3 and max(delays) > 27  # the whole range is used, not just the top
    assert backoff_delay(3, lambda: 0.25) == 2.0
