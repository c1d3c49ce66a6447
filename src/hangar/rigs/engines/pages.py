"""Following the browser's top-level pages, shared by the three engines: which page the session acts on when a
page opens another (``target="_blank"``, ``window.open``) or closes itself (``window.close()``).

What a person's browser does, the session does: a newly opened page becomes the current page (once it loaded,
within a bound, so the reply can say where it is), and when the current page closes the most recent remaining page
becomes current again; when none is left, a new page on the home page is opened rather than the session dying.

The engine learns of pages its own way (engine A from DevTools target events, engine B from BiDi context events,
engine C by listing window handles after a verb) and tells a ``PageFollower`` with ``opened`` and ``closed``; the
follower decides which page is current and asks the engine (a ``PageHost``) to switch. Only pages opened by a page
the session knows are followed: a page the browser opens on its own (a replacement tab) is not a page an agent
navigated to.

The follower also lists the pages it knows (``listing``, with each page's URL and title as the engine reads them:
engine C reads only the current window's, so another window shows what it was when it was last current) and moves
to one of them on request (``switch``), which is reported as a change like the others.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from typing import Protocol

from hangar.errors import HangarError, NotFound, Refused, Unavailable
from hangar.rigs.engines.session import Page, PageChange, PageChangeKind, PageEntry

log = logging.getLogger(__name__)

NEW_PAGE_LOAD_S = 30.0  # how long a newly opened page may take to load before the session reports it anyway
BLANK_GRACE_S = 2.0  # a new page still on about:blank after this is taken as meant to be blank (window.open(""))
LOAD_POLL_S = 0.05
CHANGES_KEPT = 8  # the latest changes a reply reports; older ones are dropped
NOTE_S = 2.0  # reading where the page being left is, for the page list: a page busy past this is listed as it was


class PageHost(Protocol):
    """What a follower asks of its engine session."""

    async def _discover_pages(self) -> None:
        """Learn of pages opened or closed so far (an engine with events makes one round trip, so every event the
        last verb caused has arrived; engine C lists its window handles)."""

    async def _show_page(self, page: str) -> None:
        """Make ``page`` the one every verb, still and live-view frame acts on."""

    async def _open_home(self) -> str:
        """Open a new page on the home page (no page is left) and return its id."""

    async def _load_state(self) -> tuple[str, str]:
        """The current page's ``document.readyState`` and ``location.href``."""

    async def current(self) -> Page: ...

    async def _describe_pages(self, pages: list[str], current: str | None) -> dict[str, tuple[str, str]]:
        """The URL and title of each of ``pages`` the engine can read without moving to it (at least
        ``current``'s); a page missing from the answer is shown as it was last seen."""

    def _engine_gone(self) -> bool:
        """True when the engine itself went away (no page can be shown any more)."""


class PageFollower:
    """The top-level pages a session knows, most recently current last, and those opened but not yet followed."""

    def __init__(self, host: PageHost, first: str) -> None:
        self._host = host
        self._recent: list[str] = [first]  # the current page last (unless it was lost)
        self._opened: list[str] = []  # opened by a known page, not followed yet, oldest first
        self._lost = False  # the current page closed and was removed from ``_recent``
        self._changes: collections.deque[PageChange] = collections.deque(maxlen=CHANGES_KEPT)
        self._seen: dict[str, tuple[str, str]] = {}  # each known page's URL and title when last read
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def pending(self) -> bool:
        """Whether ``follow`` has something to do."""
        return bool(self._opened) or self._lost

    def knows(self, page: str) -> bool:
        return page in self._recent or page in self._opened

    def known(self) -> list[str]:
        return [*self._recent, *self._opened]

    def opened(self, page: str) -> None:
        if not self.knows(page):
            self._opened.append(page)

    def closed(self, page: str) -> None:
        if page in self._opened:
            self._opened.remove(page)
        if page in self._recent:
            if page == self._recent[-1] and not self._lost:
                self._lost = True
            self._recent.remove(page)

    def soon(self) -> None:
        """Follow in the background (an engine's event said a page opened or closed)."""
        task = asyncio.get_running_loop().create_task(self._follow_quietly(), name="engine:follow-pages")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _follow_quietly(self) -> None:
        try:
            await self.follow()
        except HangarError as exc:  # the next verb's own follow meets it again and reports it
            log.debug("following the browser's pages failed: %s", exc)

    async def follow(self) -> None:
        async with self._lock:
            await self._host._discover_pages()
            while self.pending:
                kind: PageChangeKind
                if self._opened:
                    await self._note_leaving()
                    # Several opened at once: the newest becomes current, the others wait behind it.
                    *earlier, page = self._opened
                    self._opened.clear()
                    self._recent.extend(earlier)
                    kind = "opened"
                elif self._recent:
                    page, kind = self._recent[-1], "closed"
                else:
                    page, kind = await self._host._open_home(), "home"
                try:
                    await self._host._show_page(page)
                    if kind != "closed":
                        await self._loaded()
                    now = await self._host.current()
                except (NotFound, Unavailable, Refused) as exc:
                    if self._host._engine_gone():
                        raise
                    log.debug("the page %s went away while the session moved to it: %s", page, exc)
                    self._drop(page)
                    continue
                self._lost = False
                if page in self._recent:
                    self._recent.remove(page)
                self._recent.append(page)
                self._seen[page] = (now.url, now.title)
                self._changes.append(PageChange(kind, now.url, now.title))

    async def _note_leaving(self) -> None:
        """Remember where the current page is before moving away from it: an engine that reads only the current
        page (engine C) lists it so afterwards."""
        current = self._current()
        if current is not None:
            with contextlib.suppress(NotFound, Unavailable, Refused, TimeoutError):
                now = await asyncio.wait_for(self._host.current(), NOTE_S)
                self._seen[current] = (now.url, now.title)

    def _drop(self, page: str) -> None:
        """A page that failed while being shown is gone: whatever was current before must be found again."""
        if page in self._recent:
            self._recent.remove(page)
        self._lost = True

    async def _loaded(self) -> None:
        """Until the new page finished loading a document of its own, within ``NEW_PAGE_LOAD_S``; a page still on
        about:blank after ``BLANK_GRACE_S`` was opened blank (or its first response is slow: it is reported as
        blank, and is current all the same)."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        while True:
            ready, href = "loading", ""
            with contextlib.suppress(Refused, NotFound):  # between documents: look again
                ready, href = await self._host._load_state()
            elapsed = loop.time() - start
            blank = href in ("", "about:blank")
            if ready == "complete" and not blank:
                return
            if (blank and elapsed >= BLANK_GRACE_S) or elapsed >= NEW_PAGE_LOAD_S:
                return
            await asyncio.sleep(LOAD_POLL_S)

    def _current(self) -> str | None:
        return self._recent[-1] if self._recent and not self._lost else None

    async def listing(self) -> list[PageEntry]:
        """The pages the session knows, least recently current first, with what the engine can read of them."""
        async with self._lock:
            await self._host._discover_pages()
            pages, current = self.known(), self._current()
            read = await self._host._describe_pages(pages, current)
            self._seen = {p: read.get(p) or self._seen.get(p, ("", "")) for p in pages}
            return [PageEntry(p, *self._seen[p], current=p == current, seen=p in read) for p in pages]

    async def switch(self, page: str) -> Page:
        """Make the known ``page`` current; ``NotFound`` when the session knows no such page (or it closed)."""
        async with self._lock:
            await self._host._discover_pages()
            if not self.knows(page):
                raise NotFound(f"the browser has no page {page} (it may have closed); list the pages again")
            if page != self._current():
                await self._note_leaving()
            # Pages opened but not followed yet are known pages the person chose not to move to: followed, they
            # would take the session away from the page chosen. They wait behind the current page.
            others = [p for p in self._opened if p != page]
            self._opened.clear()
            at = len(self._recent) - 1 if self._current() is not None else len(self._recent)
            self._recent[at:at] = others
            try:
                await self._host._show_page(page)
                now = await self._host.current()
            except (NotFound, Unavailable, Refused):
                if self._host._engine_gone():
                    raise
                self._drop(page)
                raise NotFound(f"the page {page} closed before the browser could move to it") from None
            self._lost = False
            if page in self._recent:
                self._recent.remove(page)
            self._recent.append(page)
            self._seen[page] = (now.url, now.title)
            self._changes.append(PageChange("switched", now.url, now.title))
            return now

    def take(self) -> list[PageChange]:
        changes = list(self._changes)
        self._changes.clear()
        return changes

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


class FollowsPages:
    """The four page verbs of ``EngineSession``, answered by the session's ``PageFollower``. Listed before
    ``EngineSession`` among a session's bases, so each engine only supplies the follower (and its ``PageHost``)."""

    _pages: PageFollower

    async def follow_pages(self) -> None:
        await self._pages.follow()

    def take_page_changes(self) -> list[PageChange]:
        return self._pages.take()

    async def pages(self) -> list[PageEntry]:
        return await self._pages.listing()

    async def switch_page(self, page_id: str) -> Page:
        return await self._pages.switch(page_id)
