"""A stream's guard admits each delivery: checked again when the authority counter moved or a second passed,
refused for good once the check fails."""

from __future__ import annotations

import asyncio
import logging

import psycopg
import pytest

from hangar.errors import Forbidden
from hangar.rpc.access import AccessMonitor, Revocable


class Authority:
    def __init__(self) -> None:
        self.counter = 7
        self.checks = 0
        self.member = True

    async def stamp(self) -> int:
        return self.counter

    async def check(self) -> None:
        self.checks += 1
        if not self.member:
            raise Forbidden("you are no longer a member")


async def test_a_delivery_is_checked_again_only_when_authority_moved() -> None:
    authority = Authority()
    gate = Revocable(authority.check, stamp=authority.stamp)
    for _ in range(5):
        await gate.admit()
    assert authority.checks == 1  # the counter stayed put: one check served them all
    authority.counter += 1
    await gate.admit()
    assert authority.checks == 2
    authority.member = False
    authority.counter += 1
    with pytest.raises(Forbidden):
        await gate.admit()
    assert gate.ended.done()
    authority.member = True  # once ended, it stays ended
    with pytest.raises(Forbidden):
        await gate.admit()


async def test_time_alone_brings_a_check_back() -> None:
    authority = Authority()
    gate = Revocable(authority.check, stamp=authority.stamp, every=0.05)
    await gate.admit()
    await gate.admit()
    assert authority.checks == 1
    await asyncio.sleep(0.06)
    await gate.admit()
    assert authority.checks == 2


async def test_without_a_counter_every_delivery_is_checked() -> None:
    authority = Authority()
    gate = Revocable(authority.check)
    for _ in range(3):
        await gate.admit()
    assert authority.checks == 3


class LosesTheDatabaseOnce:
    """A watched stream whose first re-check meets the database's loss (as a pass can, between reading the
    counter and re-checking); its later ones succeed."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0

    async def recheck(self) -> None:
        self.calls += 1
        if self.calls == 1:
            raise self.error


async def test_a_recheck_cut_short_by_the_databases_loss_is_a_pause_and_is_made_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    authority = Authority()
    monitor = AccessMonitor(authority.stamp, interval=0.01, recheck_every=3600)
    stream = LosesTheDatabaseOnce(psycopg.OperationalError("connection is bad"))
    monitor.watch(stream)
    monitor.start()
    try:
        async with asyncio.timeout(10):
            while stream.calls < 2:  # the counter never moves: only the cut-short re-check brings it back
                await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        assert stream.calls == 2  # once made whole, not again until the counter moves
    finally:
        await monitor.aclose()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # a pause, not a bug report
    assert any("access monitor paused" in r.getMessage() for r in caplog.records)
    assert any("access monitor resumed" in r.getMessage() for r in caplog.records)


async def test_any_other_failure_of_a_recheck_is_logged_as_the_bug_it_is(caplog: pytest.LogCaptureFixture) -> None:
    monitor = AccessMonitor(Authority().stamp, interval=0.01, recheck_every=3600)
    stream = LosesTheDatabaseOnce(RuntimeError("a bug"))
    monitor.watch(stream)
    monitor.start()
    try:
        async with asyncio.timeout(10):
            while stream.calls < 1:
                await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
    finally:
        await monitor.aclose()
    assert stream.calls == 1  # not a pause: the next re-check waits for the counter, as for any stream
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == [
        "access monitor: re-checking a stream failed"
    ]
