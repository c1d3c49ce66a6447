"""Work a server does by itself on a schedule (scheduled backups, retention passes): a task per part, started with
the part when the process is a server and cancelled when it stops.

Each pass is the job's own (``pass_once``: it decides whether anything is due, and takes its turn with other
processes, ``hangar.core.turns``); this runs it every ``tick`` seconds, and a pass that fails is logged and the next
one tried, so one failure never ends the schedule.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from hangar.core.context import AppContext


class Scheduled(Protocol):
    tick: float

    async def pass_once(self) -> object: ...


Hook = Callable[[AppContext], Awaitable[None]]


async def run_forever(job: Scheduled, log: logging.Logger, what: str, first_after: float = 0.0) -> None:
    await asyncio.sleep(first_after)
    while True:
        try:
            await job.pass_once()
        except Exception:
            log.exception("%s: the pass failed", what)
        await asyncio.sleep(job.tick)


def scheduled_hooks(
    what: str, make: Callable[[AppContext], Scheduled], log: logging.Logger, *, first_after: float = 0.0
) -> tuple[Hook, Hook]:
    """A part's ``start`` and ``stop``: ``start`` makes the job (``make`` also provides it to the context) and, in a
    server, runs it every ``tick``, the first time ``first_after`` seconds after the start; a command run on the
    data directory only gets the service."""
    tasks: list[asyncio.Task[None]] = []

    async def start(ctx: AppContext) -> None:
        job = make(ctx)
        if ctx.bus.following:  # a server, not a command
            tasks.append(asyncio.create_task(run_forever(job, log, what, first_after), name=what))

    async def stop(_ctx: AppContext) -> None:
        while tasks:
            task = tasks.pop()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    return start, stop
