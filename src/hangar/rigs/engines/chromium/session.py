"""Engine A's ``EngineSession``: Chromium's pages driven over the DevTools protocol (``cdp.py``).

The session is composed of small parts, each given the connection or the state it needs rather than sharing the
session's: ``CurrentPage`` (``current.py``) is the page the verbs act on and the calls into it,
``PageTargets`` (``targets.py``) attaches to page targets and follows the pages a page opens or closes
(``pages.py``), ``CdpInput`` (``inputs.py``) holds the pointer, buttons, modifiers and drags between input
verbs, and ``capture.py`` takes stills and the screencast. What is left here is the rest of the verbs:
navigation, extracts, stills, the viewport, waiting for a selector, the clipboard, file inputs and the live view.

Clipboard images go through the page's async clipboard API with the script engines B and C run
(``js/clipboard_image.js``). Chromium writes images as ``image/png`` only (a JPEG ``ClipboardItem`` is refused),
so a JPEG is converted to PNG on a canvas in the page first, and the write's note says so; Chromium also
re-encodes what it stores, so the bytes read back are a PNG of the same pixels, not the bytes written.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal

from hangar.errors import Conflict, InvalidArgs, Unavailable
from hangar.rigs.engines import clipboard_image as clip
from hangar.rigs.engines.chromium import capture
from hangar.rigs.engines.chromium import page as js
from hangar.rigs.engines.chromium.cdp import CdpConnection, CommandFailed, Json
from hangar.rigs.engines.chromium.current import GROUP, PAGE_LOAD_TIMEOUT_S, CurrentPage, value
from hangar.rigs.engines.chromium.inputs import CdpInput
from hangar.rigs.engines.chromium.targets import PageTargets, first_page, metrics_override
from hangar.rigs.engines.launch import Endpoint
from hangar.rigs.engines.pages import FollowsPages
from hangar.rigs.engines.scripts import script
from hangar.rigs.engines.session import (
    EngineSession,
    Extracted,
    ExtractKind,
    Frame,
    ImageMime,
    MouseButton,
    Page,
    Still,
)

IMAGE_CALL_S = 120.0  # a 16 MB image is decoded, re-encoded and read back by the page: seconds on a busy host


class CdpSession(FollowsPages, EngineSession):
    engine = "engine-a"
    hard_reload = True
    real_drop = True

    def __init__(self, conn: CdpConnection, target_id: str, home_url: str, viewport: tuple[int, int]) -> None:
        self._conn = conn
        self._page = CurrentPage(conn)
        self._input = CdpInput(self._page)
        self._targets = PageTargets(self._page, self._input, target_id, home_url, viewport)
        self._pages = self._targets.follower
        self._screencasting = False
        self._closed = False

    @classmethod
    async def open(cls, endpoint: Endpoint, viewport: tuple[int, int], home_url: str) -> CdpSession:
        """Attach to the browser's page and size its viewport to ``viewport`` (headless Chromium's window
        keeps room for a frame it does not draw, so ``--window-size`` alone leaves the page shorter). Page
        targets are discovered from the start, so a page opened by the current one is followed
        (``pages.py``); ``home_url`` is where a new page opens when the last one closed."""
        conn = await CdpConnection.connect(endpoint)
        try:
            session = cls(conn, await first_page(conn), home_url, viewport)
            await session._targets.start()
        except BaseException:
            await conn.aclose()
            raise
        return session

    # -- navigation -----------------------------------------------------------------------------------------

    async def navigate(self, url: str) -> Page:
        return await self._page.navigation(
            lambda: self._page.call("Page.navigate", {"url": url}, PAGE_LOAD_TIMEOUT_S + 5)
        )

    async def reload(self, hard: bool) -> Page:
        return await self._page.navigation(lambda: self._page.call("Page.reload", {"ignoreCache": hard}))

    async def stop_loading(self) -> None:
        await self._page.call("Page.stopLoading")

    async def history(self, direction: Literal["back", "forward"]) -> Page:
        entries = await self._page.call("Page.getNavigationHistory")
        index = int(entries["currentIndex"]) + (-1 if direction == "back" else 1)
        if not 0 <= index < len(entries["entries"]):
            return await self.current()  # nowhere to go: the page stays, as WebDriver's back and forward do
        entry_id = entries["entries"][index]["id"]
        return await self._page.navigation(
            lambda: self._page.call("Page.navigateToHistoryEntry", {"entryId": entry_id})
        )

    async def current(self) -> Page:
        return await self._page.current()

    # -- input (inputs.py) -------------------------------------------------------------------------------

    async def locate(self, selector: str) -> tuple[int, int]:
        return await self._input.locate(selector)

    async def mouse_move(self, x: int, y: int) -> None:
        await self._input.mouse_move(x, y)

    async def mouse_button(self, down: bool, x: int | None, y: int | None, button: MouseButton = "left") -> None:
        await self._input.mouse_button(down, x, y, button)

    async def click(self, x: int, y: int, button: MouseButton = "left") -> None:
        await self._input.click(x, y, button)

    async def drag(self, start: tuple[int, int], end: tuple[int, int]) -> None:
        await self._input.drag(start, end)

    async def scroll(self, x: int, y: int, delta_x: int, delta_y: int) -> None:
        await self._input.scroll(x, y, delta_x, delta_y)

    async def key(self, combo: str) -> None:
        await self._input.key(combo)

    async def key_event(self, down: bool, key: str) -> None:
        await self._input.key_event(down, key)

    async def type_text(self, text: str) -> None:
        await self._input.type_text(text)

    async def fill(self, selector: str, value: str) -> None:
        await self._input.fill(selector, value)

    async def focus(self, selector: str) -> None:
        await self._input.focus(selector)

    async def drop_files(self, guest_paths: Sequence[str], x: int, y: int) -> None:
        await self._input.drop_files(guest_paths, x, y)

    # -- observing ------------------------------------------------------------------------------------------

    async def extract(self, kind: ExtractKind) -> Extracted:
        if kind == "console":
            return Extracted(kind, self._page.console.render())
        if kind == "dom":
            dom = "document.documentElement ? document.documentElement.outerHTML : ''"
            html = str(await self._page.evaluate(dom))
            if len(html) > js.DOM_CAP:
                html = html[: js.DOM_CAP] + "\n<!-- cut at the size cap -->"
            return Extracted(kind, html)
        await self._page.call("Accessibility.enable")
        try:
            tree = await self._page.call("Accessibility.getFullAXTree")
        finally:
            await self._page.call("Accessibility.disable")  # keeping it on slows every later DOM change
        return Extracted(kind, js.render_ax_tree(tree.get("nodes", [])))

    async def screenshot(self, full_page: bool, max_width: int, max_height: int) -> Still:
        display = await self.viewport()
        return await capture.still(self._page.call, full_page, max_width, max_height, display)

    async def viewport(self) -> tuple[int, int]:
        width, height = await self._page.evaluate("[innerWidth, innerHeight]")
        return int(width), int(height)

    async def set_viewport(self, width: int, height: int) -> None:
        # The emulated metrics drive layout, stills and the screencast alike. A running screencast is started
        # again, which makes Chromium send a frame of the new size at once: it sends frames only on damage and
        # drops one painted while the previous frame awaits its acknowledgement, so the resize's own repaint
        # could be lost and the live view left on a frame of the old size.
        await self._page.call(*metrics_override(width, height))
        self._targets.viewport = (width, height)
        self._page.moved.set()

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
                result = await self._page.call(
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

    # -- the clipboard --------------------------------------------------------------------------------------

    async def _clipboard_origin(self) -> str | None:
        origin = await self._page.evaluate(js.CLIPBOARD_ORIGIN)
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
        return str(await self._page.evaluate("navigator.clipboard.readText()", await_promise=True, gesture=True))

    async def clipboard_write(self, text: str) -> bool:
        if await self._clipboard_origin() is None:
            return False
        expression = f"navigator.clipboard.writeText({json.dumps(text)}).then(() => true)"
        return bool(await self._page.evaluate(expression, await_promise=True, gesture=True))

    async def _image_script(self, *args: object, limit_s: float) -> Any:
        """Run ``js/clipboard_image.js`` (shared with engines B and C) with a user gesture, the image as an
        argument rather than in the source."""
        try:
            result = await self._page.call("Runtime.callFunctionOn", {
                "functionDeclaration": script("clipboard_image"), "objectId": await self._page.global_object(),
                "arguments": [{"value": arg} for arg in args], "returnByValue": True, "awaitPromise": True,
                "userGesture": True, "objectGroup": GROUP}, limit_s)  # fmt: skip
        finally:
            await self._page.release()
        return value(result)

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

    async def set_input_files(self, x: int, y: int, guest_paths: Sequence[str]) -> bool:
        try:
            result = await self._page.call("Runtime.callFunctionOn", {
                "functionDeclaration": js.FILE_INPUT_AT, "objectId": await self._page.global_object(),
                "arguments": [{"value": x}, {"value": y}], "objectGroup": GROUP})  # fmt: skip
            object_id = result["result"].get("objectId")
            if "exceptionDetails" in result or not object_id:
                return False
            await self._page.call("DOM.setFileInputFiles", {"files": list(guest_paths), "objectId": object_id})
            return True
        finally:
            await self._page.release()

    async def frames(self, max_width: int, max_height: int) -> AsyncIterator[Frame]:
        """The current page's screencast; when the current page changes, the screencast stops on the old page and
        starts on the new one within the same iterator."""
        if self._screencasting:  # one screencast per page: a second would steal the first one's frames
            raise Conflict("the live view's frames are already being captured from this page")
        self._screencasting = True
        try:
            while True:
                self._page.moved.clear()
                sid = self._page.sid
                cast = capture.screencast(self._conn, sid, max_width, max_height, until=self._page.moved)
                try:  # closing this iterator closes the screencast's at once, which stops the capture
                    async with contextlib.aclosing(cast):
                        async for frame in cast:
                            yield frame
                except Unavailable:
                    if self._conn.closed:
                        raise
                    await self._pages.follow()  # the page closed under the screencast: follow, then go on there
                    if self._page.sid == sid:
                        raise
        finally:
            self._screencasting = False

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._targets.aclose()
        await self._conn.aclose()
