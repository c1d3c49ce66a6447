"""The page engine A's verbs act on, and how a verb reaches into it.

The session is attached to several page targets at once (``targets.py``), but every verb, still and live-view
frame goes to one of them: its flat session, its main frame and its console ring are held here, in one place, so
the page targets, the input verbs and the rest of the session all read the same current page and a switch to
another page (``move_to``) is seen by each at once. The calls into the page are here too: they all go to the
current page, and the element handles a verb takes live in one object group, released when the verb ends. So is
the wait for a navigation to end, since it tells the main frame's events apart by the frame id it keeps current.

Everything a page returns is untrusted: a page exception is ``Refused`` with its (capped) text.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from hangar.errors import InvalidArgs, NotFound, Refused
from hangar.rigs.engines.chromium.cdp import CdpConnection, Json, Subscription
from hangar.rigs.engines.chromium.page import ConsoleRing
from hangar.rigs.engines.session import Page

PAGE_LOAD_TIMEOUT_S = 30.0
GROUP = "hangar"  # the object group of the element handles a verb takes (released when it ends)

_NAVIGATION_EVENTS = (
    "Network.responseReceived",
    "Page.frameNavigated",
    "Page.lifecycleEvent",
    "Page.navigatedWithinDocument",
    "Page.frameStoppedLoading",
)


class CurrentPage:
    """The current page's flat session (``sid``), main frame and console ring, over the browser connection."""

    def __init__(self, conn: CdpConnection) -> None:
        self.conn = conn
        self.sid = ""
        self.frame_id = ""  # the main frame: a navigation's events are told apart by it (and move it)
        self.console = ConsoleRing()
        self.moved = asyncio.Event()  # set when the current page (or its viewport) changes: the screencast restarts

    def move_to(self, sid: str, console: ConsoleRing, frame_id: str) -> None:
        self.sid, self.console, self.frame_id = sid, console, frame_id
        self.moved.set()

    async def call(self, method: str, params: Json | None = None, limit_s: float = 30.0) -> Json:
        return await self.conn.call(method, params, self.sid, limit_s)

    async def evaluate(self, expression: str, *, await_promise: bool = False, gesture: bool = False,
                       limit_s: float = 30.0) -> Any:  # fmt: skip
        """The JSON value of ``expression`` in the page; a page exception is ``Refused`` with its text."""
        result = await self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": await_promise, "userGesture": gesture},
            limit_s,
        )
        return value(result)

    async def on(self, object_id: str, function: str, *args: object) -> Any:
        """The JSON value of ``function`` applied with ``this`` = the object, arguments passed as JSON values."""
        result = await self.call(
            "Runtime.callFunctionOn",
            {"objectId": object_id, "functionDeclaration": function, "returnByValue": True,
             "arguments": [{"value": arg} for arg in args], "objectGroup": GROUP},
        )  # fmt: skip
        return value(result)

    async def element(self, selector: str) -> str:
        """A handle on the first element matching ``selector``; ``NotFound`` naming it when none does."""
        # The selector travels as a JSON string literal, which is also a JavaScript string literal.
        result = await self.call(
            "Runtime.evaluate",
            {"expression": f"document.querySelector({json.dumps(selector)})", "objectGroup": GROUP},
        )
        if "exceptionDetails" in result:
            raise InvalidArgs(f"{selector!r} is not a valid CSS selector", field="selector")
        object_id = result["result"].get("objectId")
        if not object_id:
            raise NotFound(f"no element matches the selector {selector!r}")
        return str(object_id)

    async def global_object(self) -> str:
        """A handle on the page's ``globalThis``, for a function applied with arguments rather than spliced."""
        result = await self.call("Runtime.evaluate", {"expression": "globalThis", "objectGroup": GROUP})
        return str(result["result"]["objectId"])

    async def release(self) -> None:
        await self.call("Runtime.releaseObjectGroup", {"objectGroup": GROUP})

    async def current(self) -> Page:
        """Where the current page is: its history entry's URL, and the document's title (the entry's when the
        page cannot answer, between documents)."""
        entries = await self.call("Page.getNavigationHistory")
        entry = entries["entries"][int(entries["currentIndex"])]
        try:
            title = str(await self.evaluate("document.title"))
        except Refused:
            title = str(entry.get("title", ""))
        return Page(str(entry["url"]), title)

    async def navigation(self, start: Callable[[], Awaitable[Json]]) -> Page:
        """Run ``start`` and wait until the main frame commits a document and fires its load event (or changes
        within the document, comes back from the back-forward cache, or stops loading); the status is the
        committed document's response status. Chromium answers ``Page.navigate`` only once the navigation
        commits or fails, so the page-load timeout bounds the command too; a navigation that does not finish in
        time answers where the page is then."""
        statuses: dict[str, int] = {}
        committed: list[str] = []  # the loader of the document the main frame committed, once it has
        with (
            self.conn.subscribe(_NAVIGATION_EVENTS, self.sid, limit=4096) as events,
            contextlib.suppress(TimeoutError),
        ):
            async with asyncio.timeout(PAGE_LOAD_TIMEOUT_S):
                answer = await start()
                if answer.get("errorText") != "net::ERR_ABORTED":  # else stopped, cancelled, or a download
                    await self._loaded(events, statuses, committed)
        page = await self.current()
        return Page(page.url, page.title, statuses.get(committed[-1]) if committed else None)

    async def _loaded(self, events: Subscription, statuses: dict[str, int], committed: list[str]) -> None:
        while True:
            event = await events.get()
            params = event.params
            if event.method == "Network.responseReceived":
                if params.get("type") == "Document" and params.get("frameId") == self.frame_id:
                    statuses[str(params.get("loaderId"))] = int(params["response"]["status"])
            elif event.method == "Page.frameNavigated":
                frame = params["frame"]
                if frame.get("parentId") is None:
                    self.frame_id = str(frame["id"])
                    committed.append(str(frame["loaderId"]))
                    if params.get("type") == "BackForwardCacheRestore":
                        return
            elif event.method == "Page.navigatedWithinDocument":
                if not committed and params.get("frameId") == self.frame_id:
                    return  # a same-document navigation: no new document, no load event
            elif event.method == "Page.frameStoppedLoading":
                if params.get("frameId") == self.frame_id:
                    return  # loaded, or stopped before it could
            elif params.get("name") == "load" and committed and params.get("loaderId") == committed[-1]:
                return


def value(result: Json) -> Any:
    """The value of a ``Runtime.evaluate`` or ``callFunctionOn`` answer; the page's exception as ``Refused``."""
    details = result.get("exceptionDetails")
    if details is not None:
        thrown = details.get("exception") or {}
        text = str(thrown.get("description") or details.get("text") or "an exception")[:300]
        raise Refused(f"the page threw: {text}")
    return result["result"].get("value")
