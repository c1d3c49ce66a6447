"""The live view's frame hub over an engine that captures one stream at a time: a view opened the moment the last
one closed waits for that capture to stop instead of failing with a conflict."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import cast

from hangar.errors import Conflict
from hangar.rigs.engines.session import EngineSession, Frame
from hangar.rigs.lanes.liveview import watching
from hangar.rigs.live.rigs import LiveRig


class OneCapture:
    """Like the engines: a second capture while one runs is a ``Conflict``, and a capture takes a few turns of
    the loop to stop."""

    def __init__(self, stop_s: float = 0.0) -> None:
        self.capturing = False
        self.captures = 0
        self.stop_s = stop_s

    async def viewport(self) -> tuple[int, int]:
        return 1280, 800

    async def frames(self, max_width: int, max_height: int) -> AsyncIterator[Frame]:
        if self.capturing:
            raise Conflict("the live view's frames are already being captured from this page")
        self.capturing = True
        self.captures += 1
        try:
            while True:
                yield Frame(b"\xff\xd8\xff", max_width, max_height, time.monotonic())
                await asyncio.sleep(0.01)
        finally:
            for _ in range(5):  # stopping a screencast is a round trip to the engine
                await asyncio.sleep(0)
            await asyncio.sleep(self.stop_s)
            self.capturing = False


async def view_then_close(live: LiveRig, session: EngineSession, leaving: asyncio.Event) -> None:
    async with watching(live, session, (640, 400)) as (_hub, watcher):
        await watcher.next()
        leaving.set()  # the view closes now: its capture starts stopping


async def view_once_the_other_closes(live: LiveRig, session: EngineSession, leaving: asyncio.Event) -> Frame:
    await leaving.wait()
    async with watching(live, session, (640, 400)) as (_hub, watcher):
        _seq, frame = await asyncio.wait_for(watcher.next(), 5)
        return frame


async def test_a_view_opened_as_the_last_one_closes_waits_for_its_capture_to_stop() -> None:
    engine = OneCapture()
    session = cast(EngineSession, engine)
    live = cast(LiveRig, object())
    for _ in range(10):
        leaving = asyncio.Event()
        _, frame = await asyncio.gather(
            view_then_close(live, session, leaving), view_once_the_other_closes(live, session, leaving)
        )
        assert frame.width == 640
    await asyncio.sleep(0.05)
    assert not engine.capturing and engine.captures == 20


async def test_sizes_asked_in_quick_succession_never_start_a_capture_before_the_last_one_stopped() -> None:
    """A view resized several times at once (a window dragged, a layout switched): each size restarts the capture,
    and a restart cancelled before it started must still wait for the capture before it to stop, or the one after
    it starts on an engine still capturing."""
    engine = OneCapture(stop_s=0.05)
    session = cast(EngineSession, engine)
    live = cast(LiveRig, object())
    async with watching(live, session, (640, 400)) as (hub, watcher):
        await watcher.next()
        for width in (700, 800, 900, 1000):
            hub.resize(watcher, (width, 400))
            await asyncio.sleep(0)  # the restart before it has begun waiting, not finished
        while True:
            _seq, frame = await asyncio.wait_for(watcher.next(), 5)  # a failed capture ends this with Conflict
            if frame.width == 1000:
                break
    await asyncio.sleep(0.05)
    assert not engine.capturing
