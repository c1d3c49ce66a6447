"""When each credential was last used, as this process saw it.

Every use of a credential moves its last-used time (the session policy's idle timeout reads it), but writing
the row on every RPC frame would make each request a database write. So the time is kept here and written back
at most every ``_TOUCH_SECONDS`` (the idle timeout is counted in minutes), and once more at shutdown; checks
read the later of this record and the row.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core.clock import Clock
from hangar.identity import tables as t
from hangar.identity.models import Device

_TOUCH_SECONDS = 30.0


@dataclass
class _Use:
    """A credential's last use, and when (monotonic) it was last written back."""

    last_used_at: datetime
    touched_at: float


class LastUses:
    def __init__(self, engine: AsyncEngine, clock: Clock) -> None:
        self._db = engine
        self._clock = clock
        self._uses: dict[str, _Use] = {}

    def latest(self, device: Device) -> Device:
        """``device`` with the later of its stored last use and the one this process has not written yet."""
        last = self.last_used_at(device)
        return device if last == device.last_used_at else replace(device, last_used_at=last)

    def last_used_at(self, device: Device) -> datetime:
        """The later of ``device``'s stored last use and the one this process has not written yet."""
        use = self._uses.get(device.id)
        if use is not None and use.last_used_at > device.last_used_at:
            return use.last_used_at
        return device.last_used_at

    async def used(self, device_id: str, now: datetime) -> None:
        """Count a use at ``now``; written back when the last write is ``_TOUCH_SECONDS`` old."""
        mono = self._clock.monotonic()
        use = self._uses.get(device_id)
        if use is None:
            use = self._uses[device_id] = _Use(now, mono)
        use.last_used_at = now
        if mono - use.touched_at >= _TOUCH_SECONDS:
            use.touched_at = mono
            await self._write(device_id, now)

    async def flush(self) -> None:
        """Write back pending last-used times (at shutdown)."""
        pending = [(device_id, use.last_used_at) for device_id, use in self._uses.items()]
        for device_id, at in pending:
            await self._write(device_id, at)
        await asyncio.sleep(0)  # shutdown yields to the loop once even when nothing was pending

    async def _write(self, device_id: str, now: datetime) -> None:
        async with self._db.begin() as conn:
            await conn.execute(sa.update(t.devices).where(t.devices.c.id == device_id).values(last_used_at=now))
