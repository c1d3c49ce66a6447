"""Access is checked when it ends, too: long-lived streams (RPC watches, terminal lanes) are re-checked whenever
authority changes, so a removed member, a role lowered below a watch op's minimum, a revoked or deactivated
credential and an expired session stop receiving at that moment, not at the next request.

Whatever holds such a stream registers a ``Guarded`` with the server's ``AccessMonitor``. The monitor reads the
server database's authority counter every ``interval`` seconds (a few microseconds; it moves with any change
made by any process) and re-checks every registered stream when it moved, and at least every ``recheck_every``
seconds for what time alone ends (a session's maximum age or idle timeout). Each stream decides what to end.

The monitor ends an idle stream; a stream that delivers also asks its ``Revocable`` to ``admit`` each delivery
(every watch op's event, in the dispatcher; each thing a rig lane sends or applies), so nothing is handed on
between a change and the monitor's next look at it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from hangar.core.dbfailures import Paused
from hangar.errors import HangarError

log = logging.getLogger(__name__)

RECHECK_EVERY_S = 1.0  # what time alone ends (a session's maximum age, its idle timeout) is checked this often


class Guarded(Protocol):
    async def recheck(self) -> None:
        """Check again what was allowed when the stream opened, and end what no longer is."""


class Revocable:
    """A stream's guard: ``check`` raises a ``HangarError`` once the stream may no longer run; ``ended`` then
    resolves to that error (the stream waits on it beside its own work).

    The monitor's re-checks end a stream within its interval; ``admit``, called before each delivery, closes
    that gap: nothing is handed on after a change of authority the stream has not been checked against since.
    With ``stamp`` (the authority counter) it checks again only when the counter moved since the last check that
    passed, or ``every`` seconds after it for what time alone ends (a session's age), so a delivery mostly costs
    one counter read."""

    def __init__(
        self,
        check: Callable[[], Awaitable[object]],
        stamp: Callable[[], Awaitable[int]] | None = None,
        *,
        every: float = RECHECK_EVERY_S,
    ) -> None:
        self._check = check
        self._stamp = stamp
        self._every = every
        # The counter read before the last check that passed, and when it passed.
        self._passed: tuple[int, float] | None = None
        self.ended: asyncio.Future[HangarError] = asyncio.get_running_loop().create_future()

    async def admit(self) -> None:
        """Raise the error that ended the stream, checking again first when authority may have changed."""
        if not self.ended.done():
            stamp = await self._stamp() if self._stamp is not None else None
            now = asyncio.get_running_loop().time()
            if self._passed is not None and stamp is not None and stamp >= 0 and self._fresh(stamp, now):
                return
            await self.recheck()
            if not self.ended.done():
                self._passed = None if stamp is None else (stamp, now)
                return
        raise self.ended.result()

    def _fresh(self, stamp: int, now: float) -> bool:
        """Whether the last check that passed still holds: the counter has not moved and it is recent."""
        assert self._passed is not None
        return stamp == self._passed[0] and now - self._passed[1] < self._every

    async def recheck(self) -> None:
        if self.ended.done():
            return
        try:
            await self._check()
        except HangarError as err:
            if not self.ended.done():
                self.ended.set_result(err)


class AccessMonitor:
    def __init__(
        self,
        authority_stamp: Callable[[], Awaitable[int]],
        *,
        interval: float = 0.1,
        recheck_every: float = RECHECK_EVERY_S,
    ) -> None:
        self._stamp = authority_stamp
        self.interval = interval
        self.recheck_every = recheck_every
        self._guarded: set[Guarded] = set()
        self._task: asyncio.Task[None] | None = None
        self._paused = Paused("the access monitor", log)

    def watch(self, guarded: Guarded) -> None:
        self._guarded.add(guarded)

    def forget(self, guarded: Guarded) -> None:
        self._guarded.discard(guarded)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="access-monitor")

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        seen: int | None = None
        checked_at = loop.time()
        while True:
            await asyncio.sleep(self.interval)
            try:
                stamp = await self._stamp()
            except Exception as exc:
                if not self._paused.failed(exc):
                    log.exception("access monitor: cannot read the authority counter")
                continue
            self._paused.ok()
            now = loop.time()
            if stamp == seen and now - checked_at < self.recheck_every:
                continue
            seen, checked_at = stamp, now
            if not await self.recheck_all():
                seen = None  # a re-check the database's loss cut short is made again at the next pass

    async def recheck_all(self) -> bool:
        """Re-check every watched stream; False when the database's loss cut a re-check short (said once, as a
        pause, not a bug)."""
        whole = True
        for guarded in list(self._guarded):
            try:
                await guarded.recheck()
            except Exception as exc:
                if self._paused.failed(exc):
                    whole = False
                else:
                    log.exception("access monitor: re-checking a stream failed")
        return whole

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
