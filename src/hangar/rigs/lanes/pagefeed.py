"""The live view's page feed: the pages a browser rig's session has and where the current one is, for the address
bar and the page list of every open live view of the rig.

One feed per rig runs while anyone watches it (``following``, joined by each live view): it reads the session's
pages (``EngineSession.pages``) every ``POLL_S``, and at once when something may have moved them (``poke``: a
person's navigation through ``rig.navigate``, their click or key in the live view), and hands each watcher the list
when it changed. Engines follow pages a page opens on their own; the poll is what catches a page that moved by
itself (a redirect, a link an agent clicked, a script). A read that fails or outlasts ``READ_TIMEOUT_S`` is skipped:
the next one tries again.

A feed reads only while a live view is open, and a live view pins its rig against parking, so the engine it reads
is never frozen.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator
from typing import Any

from hangar.errors import HangarError
from hangar.rigs.engines.session import EngineSession, PageEntry
from hangar.rigs.live.rigs import LiveRig

log = logging.getLogger(__name__)

POLL_S = 1.0
READ_TIMEOUT_S = 10.0


def page_row(page: PageEntry) -> dict[str, Any]:
    """A page as the live view's ``pages`` notice and ``rig.navigate`` show it to the person."""
    return {"pageId": page.id, "url": page.url, "title": page.title, "current": page.current, "stale": not page.seen}


class PageFeed:
    """The newest page list of one rig's session, and a version that moves when it changes."""

    def __init__(self, session: EngineSession) -> None:
        self.session = session
        self.pages: list[PageEntry] | None = None
        self.version = 0
        self.users = 0
        self._changed = asyncio.Condition()
        self._poked = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="rigs:pagefeed")

    def poke(self) -> None:
        """Read the pages again now rather than at the next poll."""
        self._poked.set()

    async def _run(self) -> None:
        while True:
            self._poked.clear()
            try:
                pages = await asyncio.wait_for(self.session.pages(), READ_TIMEOUT_S)
            except (HangarError, TimeoutError) as exc:
                log.debug("rigs: reading the browser's pages failed: %r", exc)
            else:
                if pages != self.pages:
                    self.pages = pages
                    self.version += 1
                    async with self._changed:
                        self._changed.notify_all()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._poked.wait(), POLL_S)

    async def changes(self) -> AsyncIterator[list[PageEntry]]:
        """The page list now (once read) and again each time it changes; a slow reader skips to the newest."""
        seen = 0
        while True:
            async with self._changed:
                await self._changed.wait_for(functools.partial(self._moved_since, seen))
                seen, pages = self.version, self.pages
            if pages is not None:
                yield pages

    def _moved_since(self, version: int) -> bool:
        return self.version != version

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None


_FEEDS: dict[LiveRig, PageFeed] = {}


@contextlib.asynccontextmanager
async def following(live: LiveRig, session: EngineSession) -> AsyncIterator[PageFeed]:
    """Join the rig's page feed (started by the first live view, stopped by the last)."""
    feed = _FEEDS.get(live)
    if feed is None or feed.session is not session:
        feed = _FEEDS[live] = PageFeed(session)
        feed.start()
    feed.users += 1
    try:
        yield feed
    finally:
        feed.users -= 1
        if feed.users == 0:
            if _FEEDS.get(live) is feed:
                del _FEEDS[live]
            await feed.aclose()


def poke(live: LiveRig) -> None:
    """The rig's pages may have moved: its open live views hear of it now (nothing when none is open)."""
    feed = _FEEDS.get(live)
    if feed is not None:
        feed.poke()
