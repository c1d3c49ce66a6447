"""Engine A's page targets: attaching to them, following the pages a page opens or closes, and which is current.

This is the DevTools side of ``pages.py``: page targets are discovered (``Target.setDiscoverTargets``), and a page
opened by a page the session knows is told to the ``PageFollower``, which decides which page is current and asks
``PageTargets`` (its ``PageHost``) to show it. Each attached page keeps its flat session and its own console ring
until its target is destroyed; moving to a page gives it the session's viewport and makes it the ``CurrentPage``
(the screencast follows it) with nothing held (``CdpInput.reset``).

Attaching brings up what the verbs need of a page, from the moment it attaches: the console ring (console calls and
uncaught exceptions), intercepted drags (``inputs.py``), and JavaScript dialogs, accepted as they open (an
``alert`` would otherwise block every later command) and noted in the console ring. Focus is emulated so the page
behaves as a focused window: the clipboard API, focus events and ``:focus`` styles need it in a headless browser.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from hangar.errors import Refused, Unavailable
from hangar.rigs.engines.chromium.cdp import CdpConnection, Event, Json, Subscription
from hangar.rigs.engines.chromium.current import CurrentPage, value
from hangar.rigs.engines.chromium.inputs import CdpInput
from hangar.rigs.engines.chromium.page import ConsoleRing
from hangar.rigs.engines.pages import PageFollower
from hangar.rigs.engines.session import Page

LAUNCH_LOAD_TIMEOUT_S = 10.0  # the launch page is a local file; past this the session opens anyway

_TARGET_EVENTS = ("Target.targetCreated", "Target.targetDestroyed")
# The launch page has loaded once its document is complete and is not the empty one a tab starts with.
_LOAD_EXPRESSION = "[document.readyState, location.href !== 'about:blank']"
_LOAD_STATE = ("Runtime.evaluate", {"expression": _LOAD_EXPRESSION, "returnByValue": True})
_LOAD_ENDS = ("Page.loadEventFired", "Page.frameStoppedLoading")


@dataclass(frozen=True)
class _Attached:
    """A page target the session is attached to: its flat session and its own console ring."""

    sid: str
    console: ConsoleRing


class PageTargets:
    """The page targets the session is attached to, and the follower that picks the current one among them.

    The ``_discover_pages``, ``_show_page``, ``_open_home``, ``_load_state``, ``current``, ``_describe_pages`` and
    ``_engine_gone`` methods are the ``pages.PageHost`` the follower calls; nothing else does."""

    def __init__(
        self, page: CurrentPage, input_: CdpInput, first: str, home_url: str, viewport: tuple[int, int]
    ) -> None:
        self._conn = page.conn
        self._page = page
        self._input = input_
        self._launch_page = first
        self._home_url = home_url
        self.viewport = viewport  # applied to every page the session moves to (``set_viewport`` keeps it)
        self.follower = PageFollower(self, first)
        self._attached: dict[str, _Attached] = {}  # target id -> its flat session and console, while it lives
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Discover page targets from the start, so a page opened by the current one is followed, then attach to
        the page the engine opened at launch and wait (bounded) for it to load."""
        self._conn.subscribe(_TARGET_EVENTS, callback=self._on_target)
        await self._conn.call("Target.setDiscoverTargets", {"discover": True})
        await self._attach(self._launch_page, launch=True)

    async def _attach(self, target_id: str, *, launch: bool = False) -> None:
        """Attach to a page target, make it current, and bring up what the verbs need of it; ``launch``: wait
        (bounded) for the page the engine opened at launch to load."""
        attached = await self._conn.call("Target.attachToTarget", {"targetId": target_id, "flatten": True})
        sid, console = str(attached["sessionId"]), ConsoleRing()
        self._attached[target_id] = _Attached(sid, console)
        # Listeners first, so nothing logged while the domains come up is missed.
        self._conn.subscribe(("Runtime.consoleAPICalled",), sid, callback=lambda e: console.console_call(e.params))
        self._conn.subscribe(("Runtime.exceptionThrown",), sid, callback=lambda e: console.exception(e.params))
        self._conn.subscribe(("Page.javascriptDialogOpening",), sid, callback=self._on_dialog)
        self._conn.subscribe(("Input.dragIntercepted",), sid, callback=self._input.on_drag)
        with self._conn.subscribe(_LOAD_ENDS, sid) as loading:
            # Sent together and answered in order: one round trip instead of eight.
            *_, tree, state = await self._conn.call_all(
                [
                    ("Page.enable", {}),
                    ("Page.setLifecycleEventsEnabled", {"enabled": True}),
                    ("Runtime.enable", {}),
                    ("Network.enable", {"maxTotalBufferSize": 1_000_000, "maxResourceBufferSize": 500_000}),
                    ("Emulation.setFocusEmulationEnabled", {"enabled": True}),
                    ("Input.setInterceptDrags", {"enabled": True}),
                    metrics_override(*self.viewport),
                    ("Page.getFrameTree", {}),
                    _LOAD_STATE,
                ],
                sid,
            )
            self._make_current(target_id, str(tree["frameTree"]["frame"]["id"]))
            if launch:
                await self._launch_page_loaded(value(state), loading)

    def _make_current(self, target_id: str, frame_id: str) -> None:
        page = self._attached[target_id]
        self._input.reset()
        self._page.move_to(page.sid, page.console, frame_id)

    async def _launch_page_loaded(self, state: Any, loading: Subscription) -> None:
        """Wait (bounded) until the page the engine opened at launch has loaded. A session that answers sooner
        lets its first navigation race the launch page's own end of loading: that load's events end the wait for
        the new one, and the page is then read while Chromium swaps documents ("Not attached to an active
        page")."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(LAUNCH_LOAD_TIMEOUT_S):
                while state != ["complete", True]:
                    with contextlib.suppress(TimeoutError):
                        await loading.get(0.1)  # an end of loading, or a look again (it may have come first)
                    state = await self._page.evaluate(_LOAD_EXPRESSION)

    def _on_target(self, event: Event) -> None:
        if event.method == "Target.targetCreated":
            info = event.params.get("targetInfo") or {}
            opener = info.get("openerId")
            if info.get("type") == "page" and isinstance(opener, str) and self.follower.knows(opener):
                self.follower.opened(str(info["targetId"]))
                self.follower.soon()
            return
        target_id = str(event.params.get("targetId"))
        self._attached.pop(target_id, None)
        self.follower.closed(target_id)
        if self.follower.pending:
            self.follower.soon()

    def _on_dialog(self, event: Event) -> None:
        page = next((p for p in self._attached.values() if p.sid == event.session_id), None)
        console = page.console if page is not None else self._page.console
        console.add(f"[dialog {event.params.get('type', '')}] {event.params.get('message', '')} (accepted)")
        self._spawn(self._conn.call("Page.handleJavaScriptDialog", {"accept": True}, event.session_id))

    def _spawn(self, work: Awaitable[object]) -> None:
        async def run() -> None:
            with contextlib.suppress(Unavailable, Refused):
                await work

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- the follower's PageHost ------------------------------------------------------------------------------

    async def _discover_pages(self) -> None:
        # A browser-level round trip: the events sent before its answer (the last verb's) have been handled.
        await self._conn.call("Target.getTargets")

    async def _show_page(self, page: str) -> None:
        if page in self._attached:
            tree = await self._conn.call("Page.getFrameTree", {}, self._attached[page].sid)
            self._make_current(page, str(tree["frameTree"]["frame"]["id"]))
        else:
            await self._attach(page)
        await self._page.call("Page.bringToFront")  # a page in the background is throttled and paints no frames

    async def _open_home(self) -> str:
        created = await self._conn.call("Target.createTarget", {"url": self._home_url})
        return str(created["targetId"])

    async def _load_state(self) -> tuple[str, str]:
        ready, href = await self._page.evaluate("[document.readyState, location.href]")
        return str(ready), str(href)

    async def current(self) -> Page:
        return await self._page.current()

    async def _describe_pages(self, pages: list[str], current: str | None) -> dict[str, tuple[str, str]]:
        # The browser knows every target's URL and title: one round trip, no page is moved to.
        targets = await self._conn.call("Target.getTargets")
        known = set(pages)
        return {
            str(t["targetId"]): (str(t.get("url", "")), str(t.get("title", "")))
            for t in targets.get("targetInfos", [])
            if t.get("targetId") in known
        }

    def _engine_gone(self) -> bool:
        return self._conn.closed

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await self.follower.aclose()


def metrics_override(width: int, height: int) -> tuple[str, Json]:
    """The emulated viewport: it drives layout, stills and the screencast alike."""
    return "Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                  "mobile": False}  # fmt: skip


async def first_page(conn: CdpConnection) -> str:
    """The browser's first page, waiting briefly for the one opened at launch (looked for often: a boot waits on
    it); a new one when there is none after five seconds."""
    for _ in range(200):
        targets = await conn.call("Target.getTargets")
        pages = [t for t in targets.get("targetInfos", []) if t.get("type") == "page"]
        if pages:
            return str(pages[0]["targetId"])
        await asyncio.sleep(0.025)
    created = await conn.call("Target.createTarget", {"url": "about:blank"})
    return str(created["targetId"])
