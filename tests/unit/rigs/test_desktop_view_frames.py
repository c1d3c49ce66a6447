"""A desktop live view's frames: a still the desktop does not give is a missed frame while the rig runs, up to
``MAX_MISSED_FRAMES`` in a row; the view ends on the last of them, or at once when the rig has ended."""

from __future__ import annotations

from typing import Any, cast

import pytest

from hangar.errors import Unavailable
from hangar.rigs.backends.capabilities import Desktop
from hangar.rigs.engines.xwd import Still
from hangar.rigs.lanes import desktopview
from hangar.rigs.lanes.desktopview import MAX_MISSED_FRAMES, next_still

STILL = Still(b"\x89PNG", 4, 3, 4, 3)


class FlakyDesktop:
    """Fails its first ``misses`` screenshots the way a slow xwd does, then gives a still."""

    def __init__(self, misses: int) -> None:
        self.misses, self.asked = misses, 0

    async def screenshot(self, max_width: int, max_height: int) -> Still:
        self.asked += 1
        if self.asked <= self.misses:
            raise Unavailable("the desktop did not finish xwd in 30 s")
        return STILL


@pytest.fixture(autouse=True)
def no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(desktopview, "MISSED_FRAME_WAIT_S", 0.0)


def desktop(flaky: FlakyDesktop) -> Desktop:
    return cast(Desktop, cast(Any, flaky))


async def test_misses_short_of_the_limit_are_ridden_out_while_the_rig_runs() -> None:
    flaky = FlakyDesktop(MAX_MISSED_FRAMES - 1)
    assert await next_still(desktop(flaky), lambda: True, 4, 3) == STILL
    assert flaky.asked == MAX_MISSED_FRAMES


async def test_the_view_ends_at_the_limit_of_misses_in_a_row() -> None:
    flaky = FlakyDesktop(MAX_MISSED_FRAMES)
    with pytest.raises(Unavailable, match="xwd"):
        await next_still(desktop(flaky), lambda: True, 4, 3)
    assert flaky.asked == MAX_MISSED_FRAMES


async def test_the_view_ends_at_the_first_miss_once_the_rig_has_ended() -> None:
    flaky = FlakyDesktop(1)
    with pytest.raises(Unavailable):
        await next_still(desktop(flaky), lambda: False, 4, 3)
    assert flaky.asked == 1
