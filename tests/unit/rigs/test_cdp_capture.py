"""Engine A's screencast is stopped however its consumer leaves, even while the engine is still starting it: a
capture cancelled during ``Page.startScreencast`` has started in Chromium all the same, and a screencast left
running makes Chromium refuse every later start of the page ("Screencast is already active")."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any, cast

from hangar.rigs.engines.chromium.capture import screencast
from hangar.rigs.engines.chromium.cdp import CdpConnection


class NoEvents:
    async def get(self, limit_s: float | None = None) -> Any:
        await asyncio.Event().wait()


class SlowStart:
    """A DevTools connection whose ``Page.startScreencast`` takes a while to answer."""

    closed = False

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.starting = asyncio.Event()

    @contextlib.contextmanager
    def subscribe(self, methods: Any, session_id: str | None = None, limit: int = 0) -> Iterator[NoEvents]:
        yield NoEvents()

    async def call(self, method: str, params: Any = None, session_id: str | None = None, limit_s: float = 30.0) -> Any:
        self.calls.append(method)
        if method == "Page.startScreencast":
            self.starting.set()
            await asyncio.sleep(0.2)  # the round trip; the engine has started by the time it answers
        return {}


async def test_a_screencast_cancelled_while_it_starts_is_stopped() -> None:
    conn = SlowStart()
    frames = screencast(cast(CdpConnection, conn), "page-session", 640, 400)
    first = asyncio.ensure_future(frames.__anext__())
    await conn.starting.wait()
    first.cancel()
    await asyncio.gather(first, return_exceptions=True)
    assert conn.calls == ["Page.startScreencast", "Page.stopScreencast"]
