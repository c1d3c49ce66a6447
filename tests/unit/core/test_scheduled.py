"""Scheduled work (``hangar.core.scheduled``): the first pass waits ``first_after`` seconds, later ones ``tick``,
and a failing pass never ends the schedule."""

from __future__ import annotations

import asyncio
import logging

import pytest

from hangar.core import scheduled


class Job:
    tick = 7.0

    def __init__(self, log: list[object]) -> None:
        self.log = log

    async def pass_once(self) -> object:
        self.log.append("pass")
        if self.log.count("pass") == 1:
            raise RuntimeError("the first pass fails")
        return None


async def test_the_first_pass_waits_first_after_then_every_tick_and_a_failure_does_not_end_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log: list[object] = []

    async def sleep(seconds: float) -> None:
        log.append(seconds)
        if len(log) > 4:
            raise asyncio.CancelledError

    monkeypatch.setattr(scheduled.asyncio, "sleep", sleep)
    with pytest.raises(asyncio.CancelledError):
        await scheduled.run_forever(Job(log), logging.getLogger("test"), "job", first_after=300.0)
    assert log == [300.0, "pass", 7.0, "pass", 7.0]
