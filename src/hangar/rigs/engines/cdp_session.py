"""Engine A's ``EngineSession``: one Chromium page driven over the DevTools protocol (``cdp.py``).

The session attaches to the browser's first page through a flat session and keeps, from the moment it attaches:
the console ring (console calls and uncaught exceptions), the pointer's position and held buttons, held modifier
keys (the live view relays a person's keys one at a time), and any HTML drag Chromium hands over. Drags are
intercepted (``Input.setInterceptDrags``): headless Chromium has no platform drag loop, so once a page starts a
drag, further pointer moves become drag events and the release becomes the drop.

JavaScript dialogs are accepted as they open (an ``alert`` would otherwise block every later command) and
noted in the console ring. Focus is emulated so the page behaves as a focused window: the clipboard API, focus
events and ``:focus`` styles need it in a headless browser.

Clipboard images go through the page's async clipboard API with the script engines B and C run
(``js/clipboard_image.js``). Chromium writes images as ``image/png`` only (a JPEG ``ClipboardItem`` is refused),
so a JPEG is converted to PNG on a canvas in the page first, and the write's note says so; Chromium also
re-encodes what it stores, so the bytes read back are a PNG of the same pixels, not the bytes written.

Page targets are discovered (``Target.setDiscoverTargets``): a page opened by a page the session knows is attached
to and becomes current (``pages.py``), with its own console ring, the session's viewport, and the live view's
screencast moved to it; each attached page keeps its flat session until its target is destroyed. An input the page
answers by closing itself (a button calling ``window.close()``) completes the verb rather than failing it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hangar.errors import Conflict, InvalidArgs, NotFound, Refused, Unavailable
from hangar.rigs.engines import cdp_capture as capture
from hangar.rigs.engines import cdp_page as js
from hangar.rigs.engines import clipboard_image as clip
from hangar.rigs.engines.cdp import CdpConnection, CommandFailed, Event, Json, Subscription
from hangar.rigs.engines.keys import KeySpec, key_spec, parse_chord
from hangar.rigs.engines.launch import Endpoint
from hangar.rigs.engines.pages import PageFollower
from hangar.rigs.engines.scripts import script
from hangar.rigs.engines.session import (
    EngineSession,
    Extracted,
    ExtractKind,
    Frame,
    ImageMime,
    MouseButton,
    Page,
    PageChange,
    Still,
)

PAGE_LOAD_TIMEOUT_S = 30.0
IMAGE_CALL_S = 120.0  # a 16 MB image is decoded, re-encoded and read back by the page: seconds on a busy host
LAUNCH_LOAD_TIMEOUT_S = 10.0  # the launch page is a local file; past this the session opens anyway
DRAG_STEPS = 10
GROUP = "hangar"  # the object group of the element handles a verb takes (released when it ends)
DRAG_GROUP = "hangar-drag"  # the dragstart watch, held while a button is

_BUTTON_BITS = {"left": 1, "right": 2, "middle": 4}
_TARGET_EVENTS = ("Target.targetCreated", "Target.targetDestroyed")
_NAVIGATION_EVENTS = (
    "Network.responseReceived",
    "Page.frameNavigated",
    "Page.lifecycleEvent",
    "Page.navigatedWithinDocument",
    "Page.frameStoppedLoading",
)


@dataclass(frozen=True)
class _Attached:
    """A page target the session is attached to: its flat session and its own console ring."""

    sid: str
    console: js.ConsoleRing


class CdpSession(EngineSession):
    engine = "engine-a"
    hard_reload = True
    real_drop = True

    def __init__(self, conn: CdpConnection, target_id: str, home_url: str, viewport: tuple[int, int]) -> None:
        self._conn = conn
        self._home_url = home_url
        self._viewport = viewport  # applied to every page the session moves to
        self._pages = PageFollower(self, target_id)
        self._attached: dict[str, _Attached] = {}  # target id -> its flat session and console, while it lives
        self._sid = ""  # the current page's flat session
        self._frame_id = ""
        self._console = js.ConsoleRing()
        self._pointer = (0, 0)
        self._buttons = 0
        self._modifiers = 0
        self._drag: Json | None = None  # the drag Chromium intercepted, while one is under way
        self._drag_entered = False
        self._drag_seen = asyncio.Event()
        self._drag_watch: str | None = None  # handle of the page-side dragstart watch while a button is held
        self._screencasting = False
        self._moved = asyncio.Event()  # set when the current page changes: the screencast moves with it
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    @classmethod
    async def open(cls, endpoint: Endpoint, viewport: tuple[int, int], home_url: str) -> CdpSession:
        """Attach to the browser's page and size its viewport to ``viewport`` (headless Chromium's window
        keeps room for a frame it does not draw, so ``--window-size`` alone leaves the page shorter). Page
        targets are discovered from the start, so a page opened by the current one is followed
        (``pages.py``); ``home_url`` is where a new page opens when the last one closed."""
        conn = await CdpConnection.connect(endpoint)
        try:
            target_id = await _page_target(conn)
            session = cls(conn, target_id, home_url, viewport)
            conn.subscribe(_TARGET_EVENTS, callback=session._on_target)
            await conn.call("Target.setDiscoverTargets", {"discover": True})
            await session._attach(target_id, launch=True)
        except BaseException:
            await conn.aclose()
            raise
        return session

    async def _attach(self, target_id: str, *, launch: bool = False) -> None:
        """Attach to a page target, make it current, and bring up what the verbs need of it; ``launch``: wait
        (bounded) for the page the engine opened at launch to load."""
        attached = await self._conn.call("Target.attachToTarget", {"targetId": target_id, "flatten": True})
        sid, console = str(attached["sessionId"]), js.ConsoleRing()
        self._attached[target_id] = _Attached(sid, console)
        # Listeners first, so nothing logged while the domains come up is missed.
        self._conn.subscribe(("Runtime.consoleAPICalled",), sid, callback=lambda e: console.console_call(e.params))
        self._conn.subscribe(("Runtime.exceptionThrown",), sid, callback=lambda e: console.exception(e.params))
        self._conn.subscribe(("Page.javascriptDialogOpening",), sid, callback=self._on_dialog)
        self._conn.subscribe(("Input.dragIntercepted",), sid, callback=self._on_drag)
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
                    _metrics_override(*self._viewport),
                    ("Page.getFrameTree", {}),
                    _LOAD_STATE,
                ],
                sid,
            )
            self._make_current(target_id, str(tree["frameTree"]["frame"]["id"]))
            if launch:
                await self._launch_page_loaded(_value(state), loading)

    def _make_current(self, target_id: str, frame_id: str) -> None:
        page = self._attached[target_id]
        self._sid, self._console, self._frame_id = page.sid, page.console, frame_id
        # Input state belongs to the page it was sent to: the new page starts with nothing held.
        self._buttons, self._drag, self._drag_entered, self._drag_watch = 0, None, False, None
        self._moved.set()

    # -- following pages (pages.py) --------------------------------------------------------------------------

    def _on_target(self, event: Event) -> None:
        if event.method == "Target.targetCreated":
            info = event.params.get("targetInfo") or {}
            opener = info.get("openerId")
            if info.get("type") == "page" and isinstance(opener, str) and self._pages.knows(opener):
                self._pages.opened(str(info["targetId"]))
                self._pages.soon()
            return
        target_id = str(event.params.get("targetId"))
        self._attached.pop(target_id, None)
        self._pages.closed(target_id)
        if self._pages.pending:
            self._pages.soon()

    async def _discover_pages(self) -> None:
        # A browser-level round trip: the events sent before its answer (the last verb's) have been handled.
        await self._conn.call("Target.getTargets")

    async def _show_page(self, page: str) -> None:
        if page in self._attached:
            tree = await self._conn.call("Page.getFrameTree", {}, self._attached[page].sid)
            self._make_current(page, str(tree["frameTree"]["frame"]["id"]))
        else:
            await self._attach(page)
        await self._call("Page.bringToFront")  # a page in the background is throttled and paints no frames

    async def _open_home(self) -> str:
        created = await self._conn.call("Target.createTarget", {"url": self._home_url})
        return str(created["targetId"])

    async def _load_state(self) -> tuple[str, str]:
        ready, href = await self._evaluate("[document.readyState, location.href]")
        return str(ready), str(href)

    def _engine_gone(self) -> bool:
        return self._conn.closed

    async def follow_pages(self) -> None:
        await self._pages.follow()

    def take_page_changes(self) -> list[PageChange]:
        return self._pages.take()

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
                    state = await self._evaluate(_LOAD_EXPRESSION)

    async def _call(self, method: str, params: Json | None = None, limit_s: float = 30.0) -> Json:
        return await self._conn.call(method, params, self._sid, limit_s)

    async def _input(self, method: str, params: Json | None = None) -> None:
        """An input command, or an input's clean-up, which the page may answer by closing itself (a button
        calling ``window.close()``): the input was delivered, and the verb is done rather than failed."""
        sid = self._sid
        try:
            await self._conn.call(method, params, sid)
        except Unavailable:
            if self._conn.closed or not self._conn.detached(sid):
                raise

    def _spawn(self, work: Awaitable[object]) -> None:
        async def run() -> None:
            with contextlib.suppress(Unavailable, Refused):
                await work

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_dialog(self, event: Event) -> None:
        page = next((p for p in self._attached.values() if p.sid == event.session_id), None)
        console = page.console if page is not None else self._console
        console.add(f"[dialog {event.params.get('type', '')}] {event.params.get('message', '')} (accepted)")
        self._spawn(self._conn.call("Page.handleJavaScriptDialog", {"accept": True}, event.session_id))

    def _on_drag(self, event: Event) -> None:
        if event.session_id != self._sid:
            return  # a drag on a page the session left
        self._drag = event.params.get("data")
        self._drag_entered = False
        self._drag_seen.set()

    # -- evaluation -----------------------------------------------------------------------------------------

    async def _evaluate(self, expression: str, *, await_promise: bool = False, gesture: bool = False,
                        limit_s: float = 30.0) -> Any:  # fmt: skip
        """The JSON value of ``expression`` in the page; a page exception is ``Refused`` with its text."""
        result = await self._call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": await_promise, "userGesture": gesture},
            limit_s,
        )
        return _value(result)

    async def _on(self, object_id: str, function: str, *args: object) -> Any:
        """The JSON value of ``function`` applied with ``this`` = the object, arguments passed as JSON values."""
        result = await self._call(
            "Runtime.callFunctionOn",
            {"objectId": object_id, "functionDeclaration": function, "returnByValue": True,
             "arguments": [{"value": arg} for arg in args], "objectGroup": GROUP},
        )  # fmt: skip
        return _value(result)

    async def _element(self, selector: str) -> str:
        """A handle on the first element matching ``selector``; ``NotFound`` naming it when none does."""
        # The selector travels as a JSON string literal, which is also a JavaScript string literal.
        result = await self._call(
            "Runtime.evaluate",
            {"expression": f"document.querySelector({json.dumps(selector)})", "objectGroup": GROUP},
        )
        if "exceptionDetails" in result:
            raise InvalidArgs(f"{selector!r} is not a valid CSS selector", field="selector")
        object_id = result["result"].get("objectId")
        if not object_id:
            raise NotFound(f"no element matches the selector {selector!r}")
        return str(object_id)

    async def _release(self) -> None:
        await self._call("Runtime.releaseObjectGroup", {"objectGroup": GROUP})

    # -- navigation -----------------------------------------------------------------------------------------

    async def _navigation(self, start: Callable[[], Awaitable[Json]]) -> Page:
        """Run ``start`` and wait until the main frame commits a document and fires its load event (or changes
        within the document, comes back from the back-forward cache, or stops loading); the status is the
        committed document's response status. Chromium answers ``Page.navigate`` only once the navigation
        commits or fails, so the page-load timeout bounds the command too; a navigation that does not finish in
        time answers where the page is then."""
        statuses: dict[str, int] = {}
        committed: list[str] = []  # the loader of the document the main frame committed, once it has
        with (
            self._conn.subscribe(_NAVIGATION_EVENTS, self._sid, limit=4096) as events,
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
                if params.get("type") == "Document" and params.get("frameId") == self._frame_id:
                    statuses[str(params.get("loaderId"))] = int(params["response"]["status"])
            elif event.method == "Page.frameNavigated":
                frame = params["frame"]
                if frame.get("parentId") is None:
                    self._frame_id = str(frame["id"])
                    committed.append(str(frame["loaderId"]))
                    if params.get("type") == "BackForwardCacheRestore":
                        return
            elif event.method == "Page.navigatedWithinDocument":
                if not committed and params.get("frameId") == self._frame_id:
                    return  # a same-document navigation: no new document, no load event
            elif event.method == "Page.frameStoppedLoading":
                if params.get("frameId") == self._frame_id:
                    return  # loaded, or stopped before it could
            elif params.get("name") == "load" and committed and params.get("loaderId") == committed[-1]:
                return

    async def navigate(self, url: str) -> Page:
        return await self._navigation(lambda: self._call("Page.navigate", {"url": url}, PAGE_LOAD_TIMEOUT_S + 5))

    async def reload(self, hard: bool) -> Page:
        return await self._navigation(lambda: self._call("Page.reload", {"ignoreCache": hard}))

    async def stop_loading(self) -> None:
        await self._call("Page.stopLoading")

    async def history(self, direction: Literal["back", "forward"]) -> Page:
        entries = await self._call("Page.getNavigationHistory")
        index = int(entries["currentIndex"]) + (-1 if direction == "back" else 1)
        if not 0 <= index < len(entries["entries"]):
            return await self.current()  # nowhere to go: the page stays, as WebDriver's back and forward do
        entry_id = entries["entries"][index]["id"]
        return await self._navigation(lambda: self._call("Page.navigateToHistoryEntry", {"entryId": entry_id}))

    async def current(self) -> Page:
        entries = await self._call("Page.getNavigationHistory")
        entry = entries["entries"][int(entries["currentIndex"])]
        try:
            title = str(await self._evaluate("document.title"))
        except Refused:
            title = str(entry.get("title", ""))
        return Page(str(entry["url"]), title)

    # -- pointer --------------------------------------------------------------------------------------------

    async def locate(self, selector: str) -> tuple[int, int]:
        try:
            x, y = await self._on(await self._element(selector), js.CENTRE_OF)
        finally:
            await self._release()
        return int(x), int(y)

    async def _mouse(self, kind: str, button: str = "none", clicks: int = 0, **extra: object) -> None:
        x, y = self._pointer
        await self._input("Input.dispatchMouseEvent", {
            "type": kind, "x": x, "y": y, "button": button, "buttons": self._buttons, "clickCount": clicks,
            "modifiers": self._modifiers, **extra})  # fmt: skip

    async def _drag_event(self, kind: str) -> None:
        x, y = self._pointer
        await self._input("Input.dispatchDragEvent",
                          {"type": kind, "x": x, "y": y, "data": self._drag, "modifiers": self._modifiers})  # fmt: skip

    async def mouse_move(self, x: int, y: int) -> None:
        self._pointer = (x, y)
        if self._drag is not None:
            await self._drag_event("dragOver" if self._drag_entered else "dragEnter")
            self._drag_entered = True
            return
        held = next((name for name, bit in _BUTTON_BITS.items() if self._buttons & bit), "none")
        await self._mouse("mouseMoved", held)  # Chromium starts a drag only on moves that name the held button
        if self._drag_watch is not None and await self._on(self._drag_watch, "function () { return this.started; }"):
            # The page started a drag: Chromium hands it over as Input.dragIntercepted, which may trail the move.
            self._drag_watch = None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._drag_seen.wait(), 5.0)
            if self._drag is not None:
                await self._drag_event("dragEnter")
                self._drag_entered = True

    async def mouse_button(self, down: bool, x: int | None, y: int | None, button: MouseButton = "left") -> None:
        if x is not None and y is not None and (x, y) != self._pointer:
            await self.mouse_move(x, y)
        await self._press(down, button, 1)

    async def _press(self, down: bool, button: MouseButton, clicks: int) -> None:
        bit = _BUTTON_BITS[button]
        if down:
            self._buttons |= bit
            self._drag, self._drag_entered = None, False
            self._drag_seen.clear()
            await self._mouse("mousePressed", button, clicks)
            if button == "left":
                result = await self._call("Runtime.evaluate", {"expression": js.DRAG_WATCH, "objectGroup": DRAG_GROUP})
                self._drag_watch = result["result"].get("objectId")
            return
        self._buttons &= ~bit
        self._drag_watch = None
        if self._drag is not None and button == "left":
            await self._drag_event("drop")  # the drop ends Chromium's drag; no release follows it
            self._drag, self._drag_entered = None, False
        else:
            await self._mouse("mouseReleased", button, clicks)
        await self._input("Runtime.releaseObjectGroup", {"objectGroup": DRAG_GROUP})

    async def click(self, x: int, y: int, button: MouseButton = "left") -> None:
        await self.mouse_move(x, y)
        await self._press(True, button, 1)
        await self._press(False, button, 1)

    async def drag(self, start: tuple[int, int], end: tuple[int, int]) -> None:
        await self.mouse_move(*start)
        await self._press(True, "left", 1)
        (x0, y0), (x1, y1) = start, end
        for step in range(1, DRAG_STEPS + 1):
            await self.mouse_move(x0 + (x1 - x0) * step // DRAG_STEPS, y0 + (y1 - y0) * step // DRAG_STEPS)
        await self._press(False, "left", 1)

    async def scroll(self, x: int, y: int, delta_x: int, delta_y: int) -> None:
        self._pointer = (x, y)
        await self._mouse("mouseWheel", deltaX=delta_x, deltaY=delta_y)

    # -- keyboard -------------------------------------------------------------------------------------------

    async def _key(self, down: bool, spec: KeySpec) -> None:
        if spec.modifier_bit:
            self._modifiers = self._modifiers | spec.modifier_bit if down else self._modifiers & ~spec.modifier_bit
        key, text = spec.key, spec.text
        if self._modifiers & 8 and len(key) == 1 and key.isalpha():
            key = text = key.upper()
        if self._modifiers & (1 | 2 | 4):
            text = ""  # a shortcut types nothing
        params: Json = {"key": key, "code": spec.code, "windowsVirtualKeyCode": spec.key_code,
                        "nativeVirtualKeyCode": spec.key_code, "modifiers": self._modifiers}  # fmt: skip
        if down:
            params.update(type="keyDown" if text else "rawKeyDown", text=text, unmodifiedText=text)
        else:
            params["type"] = "keyUp"
        await self._input("Input.dispatchKeyEvent", params)

    async def key(self, combo: str) -> None:
        chord = parse_chord(combo)
        for modifier in chord.modifiers:
            await self._key(True, modifier)
        await self._key(True, chord.key)
        await self._key(False, chord.key)
        for modifier in reversed(chord.modifiers):
            await self._key(False, modifier)

    async def key_event(self, down: bool, key: str) -> None:
        await self._key(down, key_spec(key))

    async def type_text(self, text: str) -> None:
        await self._call("Input.insertText", {"text": text})

    async def fill(self, selector: str, value: str) -> None:
        try:
            element = await self._element(selector)
            how = await self._on(element, js.PREPARE_FILL)
            if how == "none":
                raise InvalidArgs(f"the element matching {selector!r} is not a form field", field="selector")
            if how == "direct":
                await self._on(element, js.SET_VALUE, value)
                return
            if value:
                await self._call("Input.insertText", {"text": value})
            else:
                await self.key("Delete")
            await self._on(element, js.FIRE_CHANGE)
        finally:
            await self._release()

    async def focus(self, selector: str) -> None:
        try:
            await self._on(await self._element(selector), "function () { this.focus(); }")
        finally:
            await self._release()

    # -- observing ------------------------------------------------------------------------------------------

    async def extract(self, kind: ExtractKind) -> Extracted:
        if kind == "console":
            return Extracted(kind, self._console.render())
        if kind == "dom":
            html = str(await self._evaluate("document.documentElement ? document.documentElement.outerHTML : ''"))
            if len(html) > js.DOM_CAP:
                html = html[: js.DOM_CAP] + "\n<!-- cut at the size cap -->"
            return Extracted(kind, html)
        await self._call("Accessibility.enable")
        try:
            tree = await self._call("Accessibility.getFullAXTree")
        finally:
            await self._call("Accessibility.disable")  # keeping it on slows every later DOM change
        return Extracted(kind, js.render_ax_tree(tree.get("nodes", [])))

    async def screenshot(self, full_page: bool, max_width: int, max_height: int) -> Still:
        return await capture.still(self._call, full_page, max_width, max_height)

    async def viewport(self) -> tuple[int, int]:
        width, height = await self._evaluate("[innerWidth, innerHeight]")
        return int(width), int(height)

    async def set_viewport(self, width: int, height: int) -> None:
        # The emulated metrics drive layout, stills and the screencast alike: a running screencast follows.
        await self._call(*_metrics_override(width, height))
        self._viewport = (width, height)

    async def wait_for(self, selector: str, timeout_s: float) -> bool:
        """Polls inside the page; a navigation destroys the page's promise, so the wait resumes in the new page
        with the time left."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            expression = f"({js.WAIT_FOR})({json.dumps(selector)}, {int(left * 1000)})"
            try:
                result = await self._call(
                    "Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True},
                    limit_s=left + 5.0,
                )  # fmt: skip
            except CommandFailed:  # "Inspected target navigated", "Execution context was destroyed"
                await asyncio.sleep(0.05)
                continue
            details = result.get("exceptionDetails")
            if details is None:
                return bool(result["result"].get("value"))
            if "SyntaxError" in json.dumps(details):
                raise InvalidArgs(f"{selector!r} is not a valid CSS selector", field="selector")
            await asyncio.sleep(0.05)  # the old document is gone; let the next one commit

    async def _clipboard_origin(self) -> str | None:
        origin = await self._evaluate(js.CLIPBOARD_ORIGIN)
        if origin is None:
            return None
        grant: Json = {"permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]}
        if str(origin).startswith(("http://", "https://")):
            grant["origin"] = origin  # else (a file: page) the grant covers every origin of this profile
        await self._conn.call("Browser.grantPermissions", grant)
        return str(origin)

    async def clipboard_read(self) -> str | None:
        if await self._clipboard_origin() is None:
            return None
        return str(await self._evaluate("navigator.clipboard.readText()", await_promise=True, gesture=True))

    async def clipboard_write(self, text: str) -> bool:
        if await self._clipboard_origin() is None:
            return False
        expression = f"navigator.clipboard.writeText({json.dumps(text)}).then(() => true)"
        return bool(await self._evaluate(expression, await_promise=True, gesture=True))

    async def _image_script(self, *args: object, limit_s: float) -> Any:
        """Run ``js/clipboard_image.js`` (shared with engines B and C) with a user gesture, the image as an
        argument rather than in the source."""
        try:
            result = await self._call("Runtime.callFunctionOn", {
                "functionDeclaration": script("clipboard_image"), "objectId": await self._global(),
                "arguments": [{"value": arg} for arg in args], "returnByValue": True, "awaitPromise": True,
                "userGesture": True, "objectGroup": GROUP}, limit_s)  # fmt: skip
        finally:
            await self._release()
        return _value(result)

    async def clipboard_write_image(self, mime: ImageMime, data: bytes) -> bool:
        # The permissions _clipboard_origin grants cover images: clipboardSanitizedWrite is the one
        # navigator.clipboard.write needs for image/png, clipboardReadWrite the one read() needs.
        note: str | None
        if await self._clipboard_origin() is None:
            ok, note = False, clip.NO_CLIPBOARD_API
        else:
            answer = await self._image_script("write", clip.encode(data), mime, 0, limit_s=IMAGE_CALL_S)
            ok, note = clip.written(self.engine, mime, answer)
        self.clipboard_image_note = note
        return ok

    async def clipboard_read_image(self) -> tuple[ImageMime, bytes] | None:
        note: str | None
        if await self._clipboard_origin() is None:
            image, note = None, clip.NO_CLIPBOARD_API
        else:
            answer = await self._image_script("read", "", "", clip.MAX_IMAGE_BYTES, limit_s=IMAGE_CALL_S)
            image, note = clip.read_back(answer)
        self.clipboard_image_note = note
        return image

    # -- files and the live view ----------------------------------------------------------------------------

    async def drop_files(self, guest_paths: Sequence[str], x: int, y: int) -> None:
        data = {"items": [], "files": list(guest_paths), "dragOperationsMask": 1}
        for kind in ("dragEnter", "dragOver", "drop"):
            await self._call("Input.dispatchDragEvent",
                             {"type": kind, "x": x, "y": y, "data": data, "modifiers": self._modifiers})  # fmt: skip

    async def set_input_files(self, x: int, y: int, guest_paths: Sequence[str]) -> bool:
        try:
            result = await self._call("Runtime.callFunctionOn", {
                "functionDeclaration": js.FILE_INPUT_AT, "objectId": await self._global(),
                "arguments": [{"value": x}, {"value": y}], "objectGroup": GROUP})  # fmt: skip
            object_id = result["result"].get("objectId")
            if "exceptionDetails" in result or not object_id:
                return False
            await self._call("DOM.setFileInputFiles", {"files": list(guest_paths), "objectId": object_id})
            return True
        finally:
            await self._release()

    async def _global(self) -> str:
        result = await self._call("Runtime.evaluate", {"expression": "globalThis", "objectGroup": GROUP})
        return str(result["result"]["objectId"])

    async def frames(self, max_width: int, max_height: int) -> AsyncIterator[Frame]:
        """The current page's screencast; when the current page changes, the screencast stops on the old page and
        starts on the new one within the same iterator."""
        if self._screencasting:  # one screencast per page: a second would steal the first one's frames
            raise Conflict("the live view's frames are already being captured from this page")
        self._screencasting = True
        try:
            while True:
                self._moved.clear()
                sid = self._sid
                cast = capture.screencast(self._conn, sid, max_width, max_height, until=self._moved)
                try:  # closing this iterator closes the screencast's at once, which stops the capture
                    async with contextlib.aclosing(cast):
                        async for frame in cast:
                            yield frame
                except Unavailable:
                    if self._conn.closed:
                        raise
                    await self._pages.follow()  # the page closed under the screencast: follow, then go on there
                    if self._sid == sid:
                        raise
        finally:
            self._screencasting = False

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        await self._pages.aclose()
        await self._conn.aclose()


def _value(result: Json) -> Any:
    details = result.get("exceptionDetails")
    if details is not None:
        thrown = details.get("exception") or {}
        text = str(thrown.get("description") or details.get("text") or "an exception")[:300]
        raise Refused(f"the page threw: {text}")
    return result["result"].get("value")


# The launch page has loaded once its document is complete and is not the empty one a tab starts with.
_LOAD_EXPRESSION = "[document.readyState, location.href !== 'about:blank']"
_LOAD_STATE = ("Runtime.evaluate", {"expression": _LOAD_EXPRESSION, "returnByValue": True})
_LOAD_ENDS = ("Page.loadEventFired", "Page.frameStoppedLoading")


def _metrics_override(width: int, height: int) -> tuple[str, Json]:
    return "Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                  "mobile": False}  # fmt: skip


async def _page_target(conn: CdpConnection) -> str:
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
