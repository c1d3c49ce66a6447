from __future__ import annotations

import asyncio
from datetime import timedelta

from hangar.core.clock import FakeClock
from hangar.identity.models import Device, SessionPolicy


async def test_fake_clock_wakes_sleepers_in_order() -> None:
    clock = FakeClock()
    woke: list[str] = []

    async def sleeper(name: str, s: float) -> None:
        await clock.sleep(s)
        woke.append(name)

    tasks = [asyncio.create_task(sleeper("b", 20)), asyncio.create_task(sleeper("a", 10))]
    await asyncio.sleep(0)
    clock.advance(15)
    await asyncio.sleep(0)
    assert woke == ["a"]
    clock.advance(5)
    await asyncio.gather(*tasks)
    assert woke == ["a", "b"]


def test_session_policy() -> None:
    clock = FakeClock()
    now = clock.now()
    d = Device("d", "u", "n", now, now, None)
    assert SessionPolicy().violation(d, now + timedelta(days=999)) is None
    p = SessionPolicy(max_age_minutes=60, idle_timeout_minutes=10)
    assert p.violation(d, now + timedelta(minutes=9)) is None
    assert "idle" in (p.violation(d, now + timedelta(minutes=10)) or "")
    fresh = Device("d", "u", "n", now, now + timedelta(minutes=59), None)
    assert "maximum age" in (p.violation(fresh, now + timedelta(minutes=60)) or "")
