"""Run slots of a workspace: at the cap runs hold slots, one past it waits; freed slots go oldest first; a stop
ends a wait without a slot; workspaces do not share slots; a raised cap is seen without a slot being freed."""

from __future__ import annotations

import asyncio

import pytest

from hangar.pipelines import slots as slots_module
from hangar.pipelines.slots import RunSlots


async def test_slots_at_the_cap_and_one_past_it() -> None:
    cap = 2

    async def limit() -> int:
        return cap

    slots = RunSlots(limit)
    wakes = {r: asyncio.Event() for r in ("a", "b", "c", "d", "x")}
    stopped: set[str] = set()

    def take(ws: str, run: str) -> asyncio.Task[bool]:
        return asyncio.create_task(slots.acquire(ws, run, wakes[run], lambda: run in stopped))

    a, b = take("w", "a"), take("w", "b")
    assert await a and await b and slots.held("w") == 2  # at the cap: both hold a slot
    c, d = take("w", "c"), take("w", "d")
    x = take("other", "x")
    assert await x  # another workspace has slots of its own
    await asyncio.sleep(0.01)
    assert not c.done() and not d.done() and slots.waiting("w") == ["c", "d"]  # one past it waits, in order
    slots.release("w", "a")
    assert await c and not d.done()  # the oldest waiting run takes the freed slot
    stopped.add("d")
    wakes["d"].set()  # a cancel arrived: the wait ends without a slot
    assert await d is False and slots.held("w") == 2 and slots.waiting("w") == []


async def test_a_raised_cap_is_seen_while_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    cap = 1

    async def limit() -> int:
        return cap

    monkeypatch.setattr(slots_module, "RECHECK_S", 0.01)  # the look-again interval, made short
    slots = RunSlots(limit)
    assert await slots.acquire("w", "a", asyncio.Event(), lambda: False)
    waiting = asyncio.create_task(slots.acquire("w", "b", asyncio.Event(), lambda: False))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    cap = 2
    assert await asyncio.wait_for(waiting, 5)
