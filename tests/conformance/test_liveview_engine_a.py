"""The live view's frame hub and input relay on engine A (Debian's Chromium launched on this host by
``host_engine``): one capture feeds every watcher, a watcher that does not keep up holds only the newest frame,
the capture follows the largest size asked for (up to 2560x1600) and restarts cleanly, and the person's input
(mouse, keys, text, wheel, resize) reaches the page. Pages report what happened in their own DOM."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from hangar.rigs.engines.chromium.page import jpeg_size
from hangar.rigs.engines.session import EngineSession
from hangar.rigs.lanes.liveview import (
    FrameHub,
    KeyInput,
    MouseInput,
    ResizeInput,
    TextInput,
    Watcher,
    WheelInput,
    apply_input,
    decode_header,
    encode_frame,
)
from tests.conformance.engine_fixtures import engine_fixture, pages_fixture, start_page_fixture

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

GUARD_S = 20.0  # a bound against hangs only; nothing asserts on time


pages = pages_fixture()
browser = engine_fixture("engine-a")
s = start_page_fixture("/lv-counter.html")


async def click(session: EngineSession, x: int, y: int) -> None:
    await apply_input(session, MouseInput("move", x, y))
    await apply_input(session, MouseInput("down", x, y))
    await apply_input(session, MouseInput("up", x, y))


async def until(session: EngineSession, selector: str) -> None:
    assert await session.wait_for(selector, GUARD_S), f"{selector} never matched"


@contextlib.asynccontextmanager
async def watching(session: EngineSession, *sizes: tuple[int, int]) -> AsyncIterator[tuple[FrameHub, list[Watcher]]]:
    """A frame hub on ``session`` with one watcher joined per size, in order; after, they leave and the hub closes."""
    hub = FrameHub(session)
    watchers = [Watcher(size) for size in sizes]
    for watcher in watchers:
        hub.join(watcher)
    try:
        yield hub, watchers
    finally:
        for watcher in watchers:
            hub.leave(watcher)
        await hub.aclose()


async def test_one_capture_feeds_every_watcher(s: EngineSession) -> None:
    async with watching(s, (1280, 800), (640, 400)) as (hub, (first, second)):
        seq_a, frame_a = await asyncio.wait_for(first.next(), GUARD_S)
        await click(s, 200, 150)  # the page repaints: a new frame for both
        seen: set[int] = set()
        while not seen or max(seen) <= seq_a:
            seq, frame = await asyncio.wait_for(second.next(), GUARD_S)
            seen.add(seq)
        # Both come from the one capture at the larger size: the engine refuses a second capture of a page.
        assert hub.size == (1280, 800)
        assert (frame.width, frame.height) == (1280, 800) == jpeg_size(frame.data)
        assert (frame_a.width, frame_a.height) == (1280, 800)
        assert hub.viewport == (1280, 800)
        assert decode_header(encode_frame(seq, frame))[:3] == (seq, 1280, 800)


async def test_a_watcher_that_does_not_keep_up_holds_only_the_newest_frame(s: EngineSession) -> None:
    async with watching(s, (1280, 800), (1280, 800)) as (hub, (fast, slow)):
        await asyncio.wait_for(fast.next(), GUARD_S)
        for n in range(1, 6):
            await click(s, 200, 150)
            await until(s, f'#count[data-count="{n}"]')
            await asyncio.wait_for(fast.next(), GUARD_S)
        # The slow one never read: it skipped every frame but the newest, which is the hub's latest.
        assert slow.dropped >= 4
        assert hub.latest is not None
        seq, _ = await asyncio.wait_for(slow.next(), GUARD_S)
        assert seq == hub.latest[0]


async def test_the_capture_follows_the_largest_size_asked_and_restarts_cleanly(s: EngineSession) -> None:
    try:
        async with watching(s, (640, 400)) as (hub, (small,)):
            _, frame = await asyncio.wait_for(small.next(), GUARD_S)
            assert (frame.width, frame.height) == (640, 400)
            await apply_input(s, ResizeInput(2560, 1600))
            big = Watcher((2560, 1600))
            hub.join(big)  # a larger watcher: the capture restarts at its size (no "already capturing" refusal)
            while True:
                _, frame = await asyncio.wait_for(big.next(), GUARD_S)
                if frame.width == 2560:
                    break
            assert (frame.width, frame.height) == (2560, 1600)
            hub.leave(big)
            await click(s, 200, 150)
            while True:
                _, frame = await asyncio.wait_for(small.next(), GUARD_S)
                if frame.width == 640:
                    break
            assert hub.size == (640, 400) and hub.viewport == (2560, 1600)
    finally:
        await s.set_viewport(1280, 800)


async def test_sizes_asked_at_once_leave_no_capture_running(s: EngineSession) -> None:
    """A view resized many times at once (a layout switched, a separator dragged): each size restarts the capture,
    some while the engine is still starting the one before. None is left running in the engine, so the last size
    still gets its frames (Chromium refuses a second screencast of a page: "Screencast is already active")."""
    async with watching(s, (640, 400)) as (hub, (watcher,)):
        await asyncio.wait_for(watcher.next(), GUARD_S)
        for turn in range(40):
            hub.resize(watcher, (600 + turn * 7, 600 + turn * 7))  # square: the 1280x800 page fits its width
            for _ in range(turn % 4):
                await asyncio.sleep(0)  # a restart cancelled at every point of its start
        last = 600 + 39 * 7
        while True:
            _, frame = await asyncio.wait_for(watcher.next(), GUARD_S)  # a refused start ends this with its error
            if frame.width == last:
                break


async def test_input_reaches_the_page(s: EngineSession) -> None:
    await click(s, 200, 150)
    await until(s, '#count[data-count="1"]')
    await click(s, 200, 270)  # focus the text field
    await apply_input(s, TextInput("héllo "))
    for key in ("a", "B"):
        await apply_input(s, KeyInput(True, key))
        await apply_input(s, KeyInput(False, key))
    await apply_input(s, KeyInput(True, "Enter"))
    await apply_input(s, KeyInput(False, "Enter"))
    await until(s, '#typed[data-entered="héllo aB"]')
    assert 'data-count="1"' in (await s.extract("dom")).content
    await apply_input(s, WheelInput(300, 300, 0, 600))
    await until(s, "body[data-scrolled]")
    await apply_input(s, ResizeInput(1024, 700))
    assert await s.viewport() == (1024, 700)
