"""How many runs of one workspace a process drives at once: ``pipelines.maxRunningRuns`` (a server setting,
default ``DEFAULT_MAX_RUNNING_RUNS``, read afresh whenever a run waits for a slot).

A run past the cap waits for a slot rather than being refused: a run is durable from the moment it is stored
(status ``running``, its steps ``pending``), so waiting costs nothing but time, and a refusal would drop what a
trigger fired. A run's driver holds a slot while it executes steps and frees it when the run ends or every live
step is suspended (an approval, an event, a child run: so a parent waiting for its children never holds the slot
they need); waiting runs take freed slots oldest first. A cancel reaches a waiting run at once and it ends
without running a step. After a restart the unfinished runs are resumed, and wait again, in the order they are
resumed. The cap is per process: each process that drives runs (the server, a ``hangar pipeline run``) counts its
own.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable

from hangar.core.settings import SettingSpec, strict_int

MAX_RUNNING_RUNS_SETTING = "pipelines.maxRunningRuns"
DEFAULT_MAX_RUNNING_RUNS = 8
MAX_RUNNING_RUNS_SPEC = SettingSpec(
    MAX_RUNNING_RUNS_SETTING,
    "How many pipeline runs of one workspace run at once; later ones wait for a slot.",
    strict_int(MAX_RUNNING_RUNS_SETTING, 1, 10_000),
)
RECHECK_S = 5.0  # a waiting run also looks again this often, so a raised cap is seen without a run ending


class RunSlots:
    def __init__(self, limit: Callable[[], Awaitable[int]]) -> None:
        self._limit = limit
        self._held: dict[str, set[str]] = {}
        self._waiting: dict[str, deque[str]] = {}
        self._freed: dict[str, asyncio.Event] = {}

    def held(self, ws: str) -> int:
        return len(self._held.get(ws, ()))

    def waiting(self, ws: str) -> list[str]:
        """The runs of ``ws`` waiting for a slot, oldest first."""
        return list(self._waiting.get(ws, ()))

    async def acquire(self, ws: str, run_id: str, wake: asyncio.Event, stop: Callable[[], bool]) -> bool:
        """Wait for a slot of ``ws``: True once ``run_id`` holds one (``release`` it), False when ``stop()``
        became true first (a cancel arrived: the run ends without a slot). ``wake`` is set when something for the
        run arrives."""
        queue = self._waiting.setdefault(ws, deque())
        queue.append(run_id)
        try:
            while True:
                held = self._held.setdefault(ws, set())
                if queue[0] == run_id and len(held) < await self._limit():
                    held.add(run_id)
                    return True
                if stop():
                    return False
                freed = self._freed.setdefault(ws, asyncio.Event())
                waits = [asyncio.ensure_future(freed.wait()), asyncio.ensure_future(wake.wait())]
                try:
                    await asyncio.wait(waits, timeout=RECHECK_S, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for w in waits:
                        w.cancel()
                wake.clear()
        finally:
            queue.remove(run_id)
            if not queue:
                del self._waiting[ws]
            self._notify(ws)  # the next in line may be first now

    def release(self, ws: str, run_id: str) -> None:
        held = self._held.get(ws)
        if held is not None:
            held.discard(run_id)
            if not held:
                del self._held[ws]
        self._notify(ws)

    def _notify(self, ws: str) -> None:
        """Wake every run waiting in ``ws``; each looks whether it is first in line and a slot is free."""
        freed = self._freed.pop(ws, None)
        if freed is not None:
            freed.set()
