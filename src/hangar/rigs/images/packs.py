"""Image packs as the Rigs settings screen shows them: which packs this host's backend boots from, whether each
is ready, and how far a build under way has got.

A pack build takes a minute or more and may be started by the first ``rig.open`` or by the server owner ahead
of time (``rigs.buildPack``). Either way it goes through one ``PackBuilds`` per backend, which remembers the
build's latest step so any caller (``rigs.packs``) can show progress; a second request for a pack already
building joins the build under way instead of starting another. A build under way in another process sharing the
packs (a server's first start, ``hangar rigs build-pack``) shows as building too, with the step its builder
keeps beside the build lock (``builder.build_under_way``). A ready pack being built again because its archive
moved on (``refresh``) stays ready, with the rebuild's step, and carries what its current version was built from
and the outcome of its last check.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Literal

from hangar.rigs.images.refresh import Built, Record

log = logging.getLogger(__name__)

PackPhase = Literal["ready", "missing", "building", "failed"]
ProgressFn = Callable[[str], None]

# Step texts of a build end in "(3/10)": the step number and how many there are.
_STEP = re.compile(r"\((\d+)/(\d+)\)$")


@dataclass(frozen=True)
class PackStatus:
    """One pack: what boots from it, its revision, its state, and the current step while it builds."""

    name: str
    surface: str
    revision: str
    state: PackPhase
    step: str | None = None
    step_index: int = 0
    steps: int = 0
    error: str | None = None
    label: str = ""  # what a person reads ("Chromium browser image"); the name is the cache key
    engine: str | None = None  # a browser pack's engine
    built: Built | None = None  # when the current version was built, from which archive dates (a ready pack)
    refresh: Record | None = None  # the last check against the archive and its rebuild, if any


def step_numbers(text: str) -> tuple[int, int] | None:
    """The step number and how many there are, from a step text ending in "(3/10)"."""
    found = _STEP.search(text)
    return (int(found.group(1)), int(found.group(2))) if found else None


def with_step(pack: PackStatus, text: str) -> PackStatus:
    """``pack`` showing the build step ``text`` (its numbers too, when it has them)."""
    numbers = step_numbers(text)
    if numbers is None:
        return replace(pack, step=text)
    return replace(pack, step=text, step_index=numbers[0], steps=numbers[1])


@dataclass
class _Build:
    listeners: list[ProgressFn]
    task: asyncio.Task[None] | None = None
    step: str | None = None
    step_index: int = 0
    steps: int = 0

    def running(self) -> bool:
        return self.task is not None and not self.task.done()


class PackBuilds:
    """Builds of this backend's packs, one at a time per pack, with their progress and last failure."""

    def __init__(self) -> None:
        self._running: dict[str, _Build] = {}
        self._failed: dict[str, str] = {}

    def describe(self, pack: PackStatus) -> PackStatus:
        """``pack`` (ready or missing on disk) with what this process knows: building with its step, or failed."""
        build = self._running.get(pack.name)
        if build is not None and build.running():
            # A ready pack being built again (its archive moved on) stays ready: it serves until the new one is.
            state: PackPhase = "ready" if pack.state == "ready" else "building"
            return replace(pack, state=state, step=build.step, step_index=build.step_index, steps=build.steps)
        if pack.state == "missing" and pack.name in self._failed:
            return replace(pack, state="failed", error=self._failed[pack.name])
        return pack

    async def run(self, name: str, build: Callable[[ProgressFn], Awaitable[object]], progress: ProgressFn) -> None:
        """Build ``name`` with ``build(progress)``, or wait for the build already under way; ``progress`` hears
        every step either way (a joining caller the current one at once, then the next ones). Raises what the
        build raised."""
        current = self._running.get(name)
        if current is None or not current.running():
            current = self._start(name, build)
        elif current.step is not None:
            progress(current.step)  # a caller joining a long step is told where the build is, not left silent
        current.listeners.append(progress)
        assert current.task is not None
        await asyncio.shield(current.task)

    def running(self, name: str) -> bool:
        build = self._running.get(name)
        return build is not None and build.running()

    def start(self, name: str, build: Callable[[ProgressFn], Awaitable[object]]) -> None:
        """Start building ``name`` in the background unless it is building already (the settings screen's
        button); the outcome shows in ``describe``."""
        current = self._running.get(name)
        if current is None or not current.running():
            self._start(name, build)

    def _start(self, name: str, build: Callable[[ProgressFn], Awaitable[object]]) -> _Build:
        state = _Build(listeners=[])

        def report(text: str) -> None:
            if text != state.step:
                log.info("rigs: pack %s: %s", name, text)  # one line per step, whoever waits for it
            state.step = text
            numbers = step_numbers(text)
            if numbers is not None:
                state.step_index, state.steps = numbers
            for listener in list(state.listeners):
                listener(text)

        async def body() -> None:
            try:
                await build(report)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._failed[name] = str(getattr(exc, "message", None) or exc)
                log.warning("rigs: pack %s could not be built: %s", name, self._failed[name])
                raise
            self._failed.pop(name, None)

        self._failed.pop(name, None)
        state.task = asyncio.create_task(body(), name=f"rigs:pack:{name}")
        # A background build nobody awaits must not log "exception was never retrieved".
        state.task.add_done_callback(lambda t: t.cancelled() or t.exception())
        self._running[name] = state
        return state

    async def aclose(self) -> None:
        """Cancel builds under way (the server is stopping; the next build clears what they left)."""
        tasks = [b.task for b in self._running.values() if b.task is not None and not b.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
