"""The live view of a computer rig: the desktop as moving pictures on the live view lane (``/rig/live/<rigId>``,
the same wire as a browser rig's, ``liveview``), and the person's mouse, keys, wheel, typing and display size
back while they hold control.

Differences from a browser's view, each because a desktop is not a page:
- frames are stills polled at most ``FPS`` times a second (the X server pushes nothing), sent only when the
  screen changed, as JPEG made on the host (``transcode_png``, as engine C's frames are);
- ``viewport`` is the display in guest pixels (input coordinates are in these), sent again when the mode changes;
- keys are DOM key names mapped to X11 key names (printable characters outside that map are typed on their press);
- ``resize`` changes the display mode (320x240 to 2560x1600); there are no pages, so no ``pages`` notices;
- ``hello`` carries ``surface: "computer"`` and ``engine: null``;
- dragging out: while the person drags with the left button, what the guest offers on its drag selection is sent
  once as ``{"type": "dragOut", text, uris?}`` (``uris`` when it is a list of files), after the person's rig-to-host
  clipboard consent, and never a payload the selection already held when the press began (``DragOut``).

Each open view polls on its own (no frame hub shared between views). Input and frames obey the same rules as the
browser's view: input only from the person holding control through a credential that may change things, nothing
sent once the person's access ended, counts audited when the lane closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from starlette.websockets import WebSocket

from hangar.errors import HangarError, InvalidArgs, Unavailable
from hangar.rigs.backends.capabilities import Desktop
from hangar.rigs.engines.session import Frame
from hangar.rigs.engines.webkit.transcode import transcode_png
from hangar.rigs.engines.xwd import Still
from hangar.rigs.lanes.access import LaneAccess
from hangar.rigs.lanes.consent import ClipboardGrants
from hangar.rigs.lanes.liveview import (
    MAX_VIEW,
    InputCounts,
    InputEvent,
    KeyInput,
    MouseInput,
    TextInput,
    ViewRequest,
    WheelInput,
    encode_frame,
    parse_message,
    pump_events,
    run_pumps,
)
from hangar.rigs.lanes.viewinput import InputGate, send_json
from hangar.rpc.access import Revocable

log = logging.getLogger(__name__)

FPS = 4
# A still the desktop did not give (its program failed or passed its time on a loaded host) is a missed frame,
# asked again after a pause; the view ends when the rig has, or after this many misses in a row.
MAX_MISSED_FRAMES = 5
MISSED_FRAME_WAIT_S = 1.0
DRAG_POLL_S = 0.25  # how often a drag in progress reads the guest's drag selection as the pointer moves
WHEEL_STEP = 100  # a wheel delta of this much is one click of the X wheel buttons
MAX_WHEEL_CLICKS = 20
BUTTON_NUMBERS = {"left": 1, "middle": 2, "right": 3}
# DOM key names of keys that type nothing, as X11 names them.
X11_KEYS: dict[str, str] = {
    "Enter": "Return", "Tab": "Tab", "Backspace": "BackSpace", "Escape": "Escape", "Delete": "Delete",
    "Insert": "Insert", "Home": "Home", "End": "End", "PageUp": "Prior", "PageDown": "Next", "ArrowLeft": "Left",
    "ArrowUp": "Up", "ArrowRight": "Right", "ArrowDown": "Down", "Shift": "Shift_L", "Control": "Control_L",
    "Alt": "Alt_L", "Meta": "Super_L", "Pause": "Pause", "ContextMenu": "Menu",
    " ": "space", "-": "minus", "=": "equal", "[": "bracketleft", "]": "bracketright", "\\": "backslash",
    ";": "semicolon", "'": "apostrophe", ",": "comma", ".": "period", "/": "slash", "`": "grave",
    **{f"F{n}": f"F{n}" for n in range(1, 13)},
}  # fmt: skip


def x11_key(key: str) -> str | None:
    """The X11 name of a DOM key, or None for a printable character that is typed instead (``é``, ``!``)."""
    if key in X11_KEYS:
        return X11_KEYS[key]
    if len(key) == 1 and key.isascii() and key.isalnum():
        return key
    return None


async def apply_desktop_input(desktop: Desktop, event: InputEvent) -> None:
    if isinstance(event, MouseInput):
        await desktop.check_point(event.x, event.y, "x")
        move = f"mousemove {event.x} {event.y}"
        if event.action == "move":
            await desktop.pointer([move])
        else:
            press = "mousedown" if event.action == "down" else "mouseup"
            await desktop.pointer([move, f"{press} {BUTTON_NUMBERS[event.button]}"])
    elif isinstance(event, KeyInput):
        name = x11_key(event.key)
        if name is not None:
            await desktop.pointer([f"{'keydown' if event.down else 'keyup'} {name}"])
        elif event.down:
            await desktop.type_text(event.key)
    elif isinstance(event, WheelInput):
        await desktop.check_point(event.x, event.y, "x")
        steps = [f"mousemove {event.x} {event.y}"]
        for delta, (less, more) in ((event.delta_y, (4, 5)), (event.delta_x, (6, 7))):
            clicks = min(MAX_WHEEL_CLICKS, max(1, abs(delta) // WHEEL_STEP)) if delta else 0
            if clicks:
                steps.append(f"click --repeat {clicks} {more if delta > 0 else less}")
        await desktop.pointer(steps)
    elif isinstance(event, TextInput):
        await desktop.type_text(event.text)
    else:
        await desktop.set_size(event.width, event.height)


class HeldInput:
    """The buttons and keys the person holds down through this view, released when the view ends: a viewer who
    leaves mid-press (or whose connection drops) must not leave the desktop with a button held, since the X server
    then keeps the pointer grabbed for whichever client took the press and the agent's next clicks go astray."""

    def __init__(self) -> None:
        self.buttons: set[int] = set()
        self.keys: set[str] = set()

    def note(self, event: InputEvent) -> None:
        if isinstance(event, MouseInput) and event.action != "move":
            button = BUTTON_NUMBERS[event.button]
            self.buttons.add(button) if event.action == "down" else self.buttons.discard(button)
        elif isinstance(event, KeyInput) and (name := x11_key(event.key)) is not None:
            self.keys.add(name) if event.down else self.keys.discard(name)

    def releases(self) -> list[str]:
        return [f"mouseup {b}" for b in sorted(self.buttons)] + [f"keyup {k}" for k in sorted(self.keys)]


class DragOut:
    """Dragging out of the desktop: while the person's left button is down, the guest's drag selection
    (``XdndSelection``) is read as the pointer moves (at most every ``DRAG_POLL_S``) and on release; a payload is
    offered once per press, and never one identical to what the selection held when the press began (a stale
    payload of an earlier drag)."""

    def __init__(self) -> None:
        self.before: str | None = None  # what the drag selection held when the press began; None: no press
        self.sent = False
        self.read_at = 0.0

    async def follow(self, desktop: Desktop, event: MouseInput) -> dict[str, Any] | None:
        if event.button != "left":
            return None
        if event.action == "down":
            self.before, self.sent, self.read_at = await desktop.read_selection("xdnd"), False, time.monotonic()
            return None
        if self.before is None or self.sent:
            if event.action == "up":
                self.before = None
            return None
        if event.action == "move" and time.monotonic() - self.read_at < DRAG_POLL_S:
            return None
        self.read_at = time.monotonic()
        payload = await desktop.read_selection("xdnd")
        before = self.before
        if event.action == "up":
            self.before = None
        if not payload or payload == before:
            return None
        self.sent = True
        uris = [line for line in payload.splitlines() if line and not line.startswith("#")]
        if uris and all(u.startswith("file://") for u in uris):
            return {"uris": uris, "text": payload}
        return {"text": payload}


async def next_still(desktop: Desktop, rig_alive: Callable[[], bool], width: int, height: int) -> Still:
    """The desktop's next still for a live view, riding out up to ``MAX_MISSED_FRAMES - 1`` misses in a row while
    the rig runs: one slow screenshot must not end a person's view."""
    missed = 0
    while True:
        try:
            return await desktop.screenshot(width, height)
        except Unavailable as exc:
            missed += 1
            if missed >= MAX_MISSED_FRAMES or not rig_alive():
                raise
            log.info("rigs: a live view missed a frame of the desktop (%d in a row): %s", missed, exc.message)
            await asyncio.sleep(MISSED_FRAME_WAIT_S)


async def serve_desktop(ws: WebSocket, access: LaneAccess, size: tuple[int, int], guard: Revocable) -> None:
    """Serve one live view of a computer rig until the person leaves, loses access or the rig ends."""
    mgr, principal, me = access.manager, access.principal, access.principal.user_id
    counts = InputCounts()
    view = list(size)
    drag = DragOut()
    held = HeldInput()
    drags: list[int] = []  # the size of each payload dragged out, for the audit
    async with mgr.watch(access.ws, access.live.id) as (live, events):
        async with mgr.acting(access.ws, live.id, principal, mutating=False, what="live view") as (_l, handle):
            desktop = handle.desktop()
        await mgr.log_action(access.ws, live.id, principal, "liveview.open", {"width": size[0], "height": size[1]})
        await send_json(
            ws,
            {"type": "hello", "engine": None, "surface": "computer", "controller": live.controller, "you": me,
             "maxWidth": MAX_VIEW[0], "maxHeight": MAX_VIEW[1]},
        )  # fmt: skip

        async def pump_frames() -> None:
            told: tuple[int, int] | None = None
            last: bytes | None = None
            seq = 0
            while True:
                began = time.monotonic()
                still = await next_still(desktop, handle.alive, view[0], view[1])
                await guard.admit()  # nothing reaches a person whose access ended, however recently
                display = (still.display_width, still.display_height)
                if display != told:
                    told = display
                    await send_json(ws, {"type": "viewport", "width": display[0], "height": display[1]})
                if still.png != last:
                    last = still.png
                    jpeg = await transcode_png(still.png, still.width, still.height, "jpeg")
                    seq += 1
                    await ws.send_bytes(encode_frame(seq, Frame(jpeg, still.width, still.height, began)))
                    counts.frames += 1
                await asyncio.sleep(max(0.0, 1 / FPS - (time.monotonic() - began)))

        async def pump_input() -> None:
            gate = InputGate(ws, access, live, counts, guard)
            while True:
                msg = await ws.receive()
                if msg["type"] == "websocket.disconnect":
                    return
                text = msg.get("text")
                try:
                    if text is None:
                        raise InvalidArgs("send input as JSON text frames", field="type")
                    parsed = parse_message(text)
                    if isinstance(parsed, ViewRequest):
                        view[:] = [parsed.width, parsed.height]
                        continue
                    if not await gate.admit():
                        continue
                    await apply_desktop_input(desktop, parsed)
                    held.note(parsed)
                    counts.count(parsed)  # a resize: the next frame tells the new display size
                    if isinstance(parsed, MouseInput):
                        found = await drag.follow(desktop, parsed)
                        if found is not None:
                            await ClipboardGrants(mgr.app.dbs.server, mgr.app.clock).require(principal, "rigToHost")
                            await send_json(ws, {"type": "dragOut", **found})
                            drags.append(len(found.get("text", "")))
                except HangarError as err:
                    await send_json(ws, {"type": "error", **err.to_dict()})

        try:
            await run_pumps([pump_frames(), pump_events(ws, live, events, guard, me), pump_input()], guard, live.id)
        finally:
            if releases := held.releases():
                with contextlib.suppress(Exception):  # best effort: the rig may be ending too
                    await desktop.pointer(releases)
            with contextlib.suppress(HangarError):
                closing = {**counts.details(0), "dragOut": {"count": len(drags), "chars": sum(drags)}}
                await mgr.log_action(access.ws, live.id, principal, "liveview.close", closing)
    with contextlib.suppress(Exception):
        await ws.close(code=1000)
