"""Engine A's input verbs: pointer, keys, drags, wheel, text, filling and focusing fields, and file drops.

Chromium's input events carry the whole input state with each event (the pointer's position, the held buttons as
a bit mask, the held modifiers), so the session keeps that state itself: the live view relays a person's keys and
buttons one at a time, and each later event must say what is still held. The state belongs to the page the
events went to; when the current page changes it starts over (``reset``).

HTML drags are intercepted (``Input.setInterceptDrags``, turned on for every attached page in ``targets.py``):
headless Chromium has no platform drag loop, so once a page starts a drag, further pointer moves become drag
events and the release becomes the drop. An input the page answers by closing itself (a button calling
``window.close()``) completes the verb rather than failing it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

from hangar.errors import InvalidArgs, Unavailable
from hangar.rigs.engines.chromium import page as js
from hangar.rigs.engines.chromium.cdp import Event, Json
from hangar.rigs.engines.chromium.current import CurrentPage
from hangar.rigs.engines.keys import KeySpec, key_spec, parse_chord
from hangar.rigs.engines.session import MouseButton

DRAG_STEPS = 10
DRAG_GROUP = "hangar-drag"  # the dragstart watch, held while a button is

_BUTTON_BITS = {"left": 1, "right": 2, "middle": 4}


class CdpInput:
    """Input to the current page, with the pointer, buttons, modifiers and intercepted drag held between verbs."""

    def __init__(self, page: CurrentPage) -> None:
        self._page = page
        self._pointer = (0, 0)
        self._buttons = 0
        self._modifiers = 0
        self._drag: Json | None = None  # the drag Chromium intercepted, while one is under way
        self._drag_entered = False
        self._drag_seen = asyncio.Event()
        self._drag_watch: str | None = None  # handle of the page-side dragstart watch while a button is held

    def reset(self) -> None:
        """The current page changed: input state belongs to the page it was sent to, the new page starts with
        nothing held."""
        self._buttons, self._drag, self._drag_entered, self._drag_watch = 0, None, False, None

    def on_drag(self, event: Event) -> None:
        """``Input.dragIntercepted`` from an attached page: the drag a page started, handed over."""
        if event.session_id != self._page.sid:
            return  # a drag on a page the session left
        self._drag = event.params.get("data")
        self._drag_entered = False
        self._drag_seen.set()

    async def _send(self, method: str, params: Json | None = None) -> None:
        """An input command, or an input's clean-up, which the page may answer by closing itself (a button
        calling ``window.close()``): the input was delivered, and the verb is done rather than failed."""
        conn, sid = self._page.conn, self._page.sid
        try:
            await conn.call(method, params, sid)
        except Unavailable:
            if conn.closed or not conn.detached(sid):
                raise

    # -- pointer --------------------------------------------------------------------------------------------

    async def locate(self, selector: str) -> tuple[int, int]:
        try:
            x, y = await self._page.on(await self._page.element(selector), js.CENTRE_OF)
        finally:
            await self._page.release()
        return int(x), int(y)

    async def _mouse(self, kind: str, button: str = "none", clicks: int = 0, **extra: object) -> None:
        x, y = self._pointer
        await self._send("Input.dispatchMouseEvent", {
            "type": kind, "x": x, "y": y, "button": button, "buttons": self._buttons, "clickCount": clicks,
            "modifiers": self._modifiers, **extra})  # fmt: skip

    async def _drag_event(self, kind: str) -> None:
        x, y = self._pointer
        await self._send("Input.dispatchDragEvent",
                         {"type": kind, "x": x, "y": y, "data": self._drag, "modifiers": self._modifiers})  # fmt: skip

    async def mouse_move(self, x: int, y: int) -> None:
        self._pointer = (x, y)
        if self._drag is not None:
            await self._drag_event("dragOver" if self._drag_entered else "dragEnter")
            self._drag_entered = True
            return
        held = next((name for name, bit in _BUTTON_BITS.items() if self._buttons & bit), "none")
        await self._mouse("mouseMoved", held)  # Chromium starts a drag only on moves that name the held button
        if self._drag_watch is not None and await self._page.on(
            self._drag_watch, "function () { return this.started; }"
        ):
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
                watch = {"expression": js.DRAG_WATCH, "objectGroup": DRAG_GROUP}
                result = await self._page.call("Runtime.evaluate", watch)
                self._drag_watch = result["result"].get("objectId")
            return
        self._buttons &= ~bit
        self._drag_watch = None
        if self._drag is not None and button == "left":
            await self._drag_event("drop")  # the drop ends Chromium's drag; no release follows it
            self._drag, self._drag_entered = None, False
        else:
            await self._mouse("mouseReleased", button, clicks)
        await self._send("Runtime.releaseObjectGroup", {"objectGroup": DRAG_GROUP})

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

    async def drop_files(self, guest_paths: Sequence[str], x: int, y: int) -> None:
        """The drag events a person's drop of files from outside the browser makes, with the held modifiers."""
        data = {"items": [], "files": list(guest_paths), "dragOperationsMask": 1}
        for kind in ("dragEnter", "dragOver", "drop"):
            event = {"type": kind, "x": x, "y": y, "data": data, "modifiers": self._modifiers}
            await self._page.call("Input.dispatchDragEvent", event)

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
        await self._send("Input.dispatchKeyEvent", params)

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
        await self._page.call("Input.insertText", {"text": text})

    async def fill(self, selector: str, value: str) -> None:
        page = self._page
        try:
            element = await page.element(selector)
            how = await page.on(element, js.PREPARE_FILL)
            if how == "none":
                raise InvalidArgs(f"the element matching {selector!r} is not a form field", field="selector")
            if how == "direct":
                await page.on(element, js.SET_VALUE, value)
                return
            if value:
                await page.call("Input.insertText", {"text": value})
            else:
                await self.key("Delete")
            await page.on(element, js.FIRE_CHANGE)
        finally:
            await page.release()

    async def focus(self, selector: str) -> None:
        try:
            await self._page.on(await self._page.element(selector), "function () { this.focus(); }")
        finally:
            await self._page.release()
