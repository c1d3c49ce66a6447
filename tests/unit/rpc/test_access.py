"""A stream's guard admits each delivery: checked again when the authority counter moved or a second passed,
refused for good once the check fails."""

from __future__ import annotations

import asyncio

import pytest

from hangar.errors import Forbidden
from hangar.rpc.access import Revocable


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
