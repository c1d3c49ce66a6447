"""A job's wait for its enclosure, told to the job's caller as it goes (``hangar.core.confine.Wait``).

A backend reports a boot's progress with plain calls (``progress("terminal image: downloading packages (4/10)")``)
from inside its work; the caller's ``on_wait`` is a coroutine (it publishes an event, writes a step's progress).
``WaitRelay`` sits between them: each new text is queued and delivered in order by one task of the relay's own,
so the boot never waits for the caller's database, and a listener that fails is logged and never fails the job.
Each step delivered is one line in the server log (a step, never a byte of output), naming the job's scope.

A wait shorter than ``GRACE_S`` is not told at all: an enclosure booting from a built pack is up in well under it,
and saying "starting the enclosure" for every run would make a log line and an event of each boot. A longer wait
(a first pack build, a boot slowed by a busy host) is told from its first step on, nothing of it left out.
"""

from __future__ import annotations

import asyncio
import logging

from hangar.core.confine import OnWait, Wait
from hangar.rigs.images.packs import step_numbers

log = logging.getLogger("hangar.rigs.confinement.waits")

STARTING = "starting the enclosure"
ENCLOSURE_UP = "the enclosure is up"
TEXT_MAX = 500  # characters of one step kept (a backend's text is short; a build's may quote its tool)
GRACE_S = 2.0  # a wait over before this is not told (a warm boot takes tens of milliseconds)


class WaitRelay:
    """One job's wait: ``relay(text)`` for each step heard, ``await finish(text)`` once it is over."""

    def __init__(self, key: str, on_wait: OnWait | None, *, grace_s: float = GRACE_S) -> None:
        self._key = key
        self._on_wait = on_wait
        self._grace_s = grace_s
        self._said: str | None = None
        self._told = grace_s <= 0  # the grace is over: steps are being delivered
        self._queue: asyncio.Queue[Wait] = asyncio.Queue()
        self._pump: asyncio.Task[None] | None = None

    def __call__(self, text: str) -> None:
        text = " ".join(text.split())[:TEXT_MAX]
        if not text or text == self._said:
            return
        self._said = text
        numbers = step_numbers(text)
        self._queue.put_nowait(Wait(text, *numbers) if numbers is not None else Wait(text))
        if self._pump is None:
            self._pump = asyncio.get_running_loop().create_task(self._deliver())

    async def _deliver(self) -> None:
        await asyncio.sleep(self._grace_s)
        self._told = True
        while True:
            wait = await self._queue.get()
            try:
                if wait.over:
                    log.info("%s waits no more: %s", self._key, wait.text)
                else:
                    log.info("%s waits: %s", self._key, wait.text)
                if self._on_wait is not None:
                    await self._on_wait(wait)
            except Exception:
                log.exception("%s: reporting what it waits for failed", self._key)
            finally:
                self._queue.task_done()

    async def finish(self, text: str | None) -> None:
        """The wait is over: when it was told, ``text`` closes it (``over``), and this returns once every step is
        delivered, so the caller hears them before what comes next (the program's output, or why it failed). A
        wait over within the grace is dropped untold."""
        pump = self._pump
        if pump is None:
            return
        if not self._told:
            self.cancel()
            return
        if text is not None:
            self._queue.put_nowait(Wait(text, over=True))
        try:
            await self._queue.join()
        finally:
            self.cancel()

    def cancel(self) -> None:
        """Stop delivering (the job was cancelled): what is still queued is dropped."""
        pump, self._pump = self._pump, None
        if pump is not None:
            pump.cancel()  # nothing to await: a cancelled delivery ends on its own
