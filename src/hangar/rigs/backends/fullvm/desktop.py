"""The desktop of a full VM (``Desktop`` for ``fullvm-kvm`` and ``fullvm-tcg``), as the spec puts it: input through
the hypervisor, capture through the guest agent.

- Input: QMP ``input-send-event`` on the VM's own devices: keys as QEMU key codes on its PC keyboard
  (``keys``), the pointer as absolute positions on its virtio tablet (0 to 32767 across the display, which the
  guest's X server scales to the current mode) and buttons on it. Nothing runs in the guest to press a key, so
  input keeps working whatever the guest's processes do.
- Capture and what only the guest knows (the display's size, the pointer, the selections): programs the image
  carries (``xwd``, ``xdpyinfo``, ``xdotool``, ``xrandr``, the selection reader ``xguest.PROGRAM``) run through the
  guest agent's ``guest-exec``, on display ``:0``; their output is the guest's, untrusted and bounded.

Pointer steps arrive in the words the enclosure's desktop passes to xdotool (``mousemove X Y``, ``click --repeat
N B``, ``mousedown B``, ``mouseup B``, ``keydown NAME``, ``keyup NAME``, ``sleep S``) and are carried out here as
events, so the lanes drive both backends the same way.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

from hangar.errors import InvalidArgs, Unavailable
from hangar.rigs.backends.capabilities import Desktop, Selection, Still, file_uris
from hangar.rigs.backends.fullvm import keys
from hangar.rigs.backends.fullvm.machine import DISPLAY_CARD, Machine
from hangar.rigs.backends.xguest import PROGRAM
from hangar.rigs.engines.xwd import still_of

DISPLAY_ENV = ["DISPLAY=:0", "HOME=/root", "PATH=/usr/local/bin:/usr/bin:/bin"]
ABS_MAX = 32767
STEP_TIMEOUT_S = 60.0  # one guest program under TCG on a busy host
SELECTION_MAX_BYTES = 1 << 20
# The PC keyboard's controller queues a few scancodes only, and QEMU drops what overflows it while a guest under
# TCG drains it slowly: one character per QMP message, with a pause between.
TYPE_PAUSE_S = 0.02
_BUTTONS = {1: "left", 2: "middle", 3: "right", 4: "wheel-up", 5: "wheel-down", 6: "wheel-left", 7: "wheel-right"}
_DIMENSIONS = re.compile(rb"dimensions:\s+(\d+)x(\d+) pixels")
_LOCATION = re.compile(rb"x:(\d+) y:(\d+)")


class VmDesktop(Desktop):
    def __init__(self, machine: Machine) -> None:
        self.machine = machine
        self._size: tuple[int, int] | None = None

    async def wait_ready(self, deadline_s: float) -> None:
        """Wait until the guest's X server answers (it starts beside the guest agent, not before it)."""
        loop = asyncio.get_running_loop()
        until = loop.time() + deadline_s
        while True:
            try:
                self._size = await self._query_size()
                return
            except Unavailable:
                if loop.time() > until:
                    raise Unavailable(f"the VM's X server did not start within {deadline_s:g} s") from None
            await asyncio.sleep(0.5)

    async def size(self) -> tuple[int, int]:
        if self._size is None:
            self._size = await self._query_size()
        return self._size

    async def screenshot(self, max_width: int, max_height: int) -> Still:
        dump = await self._guest(["xwd", "-root", "-silent"])
        still = still_of(dump, max_width, max_height)
        self._size = (still.display_width, still.display_height)  # the still says what the mode is now
        return still

    async def cursor(self) -> tuple[int, int]:
        found = _LOCATION.search(await self._guest(["xdotool", "getmouselocation"]))
        if found is None:
            raise Unavailable("the VM did not say where its pointer is")
        return int(found.group(1)), int(found.group(2))

    async def check_point(self, x: int, y: int, field: str) -> None:
        width, height = await self.size()
        if not (0 <= x < width and 0 <= y < height):
            raise InvalidArgs(f"{field}: ({x}, {y}) lies off the {width}x{height} display", field=field)

    async def pointer(self, steps: Sequence[str]) -> None:
        for step in steps:
            words = step.split()
            verb, rest = words[0], words[1:]
            if verb == "mousemove":
                await self._send([*await self._move(int(rest[0]), int(rest[1]))])
            elif verb == "click":
                count = int(rest[1]) if rest[:1] == ["--repeat"] else 1
                button = _button(int(rest[-1]))
                for _ in range(count):  # a press and its release in one input frame may be merged away
                    await self._send([_btn(button, True)])
                    await self._send([_btn(button, False)])
            elif verb in ("mousedown", "mouseup"):
                await self._send([_btn(_button(int(rest[0])), verb == "mousedown")])
            elif verb in ("keydown", "keyup"):
                codes = self._codes(rest[0], "action.text")
                await self._send([_key(c, verb == "keydown") for c in codes])
            elif verb == "sleep":
                await asyncio.sleep(float(rest[0]))
            else:
                raise InvalidArgs(f"a pointer step this desktop does not know: {verb!r}")

    async def key(self, combo: str, hold_s: float | None, field: str) -> None:
        codes = self._codes(combo, field)
        await self._send([_key(c, True) for c in codes])
        if hold_s:
            await asyncio.sleep(hold_s)
        await self._send([_key(c, False) for c in reversed(codes)])

    async def type_text(self, text: str) -> None:
        bad = keys.untypable(text)
        if bad:
            raise InvalidArgs(f"action.text: the VM's keyboard cannot type {bad!r}", field="action.text")
        for char in text:
            code, shifted = keys.CHARACTERS[char]
            events = [_key(code, True), _key(code, False)]
            if shifted:
                events = [_key("shift", True), *events, _key("shift", False)]
            await self._send(events)
            await asyncio.sleep(TYPE_PAUSE_S)

    async def set_size(self, width: int, height: int) -> tuple[int, int]:
        await self._guest(["xrandr", "-s", f"{width}x{height}"])
        self._size = await self._query_size()
        return self._size

    async def read_selection(self, selection: Selection) -> str:
        targets = ("UTF8_STRING", "text/plain;charset=utf-8", "STRING", "TEXT")
        out = await self._guest(["python3", "-c", PROGRAM, "read", selection, str(SELECTION_MAX_BYTES), *targets])
        return out[:SELECTION_MAX_BYTES].decode("utf-8", "replace")

    async def write_clipboard(self, data: bytes, target: str = "UTF8_STRING") -> None:
        # xclip forks to serve the selection until another owner takes it; the data goes on stdin, never argv.
        script = 'f=$(mktemp) && cat > "$f" && xclip -selection clipboard -t "$1" -i "$f" >/dev/null 2>&1; rm -f "$f"'
        await self._guest(["sh", "-c", script, "sh", target], stdin=data)

    async def offer_files(self, guest_paths: Sequence[str]) -> None:
        await self.write_clipboard(file_uris(guest_paths), "text/uri-list")

    def log(self) -> str:
        return self.machine.console_tail()

    def _codes(self, combo: str, field: str) -> list[str]:
        codes = keys.combo_codes(combo)
        if codes is None:
            unknown = " ".join(keys.unknown_names(combo))
            raise InvalidArgs(f"{field}: the VM's keyboard has no key named {unknown} (in {combo!r})", field=field)
        return codes

    async def _move(self, x: int, y: int) -> list[dict[str, Any]]:
        width, height = await self.size()
        # The middle of the pixel, on the tablet's 0..32767 scale the guest maps across the display.
        return [_abs("x", (2 * x + 1) * ABS_MAX // (2 * width)), _abs("y", (2 * y + 1) * ABS_MAX // (2 * height))]

    async def _send(self, events: list[dict[str, Any]]) -> None:
        if events:
            arguments = {"events": events, "device": DISPLAY_CARD}  # to the devices bound to the display card
            await self.machine.qmp.execute("input-send-event", arguments)

    async def _query_size(self) -> tuple[int, int]:
        found = _DIMENSIONS.search(await self._guest(["xdpyinfo"]))
        if found is None:
            raise Unavailable("the VM's X server did not say its display size")
        return int(found.group(1)), int(found.group(2))

    async def _guest(self, argv: list[str], *, stdin: bytes | None = None) -> bytes:
        result = await self.machine.agent.run(argv, stdin=stdin, env=DISPLAY_ENV, timeout_s=STEP_TIMEOUT_S)
        if result.exit_code != 0:
            said = result.stderr.decode("utf-8", "replace").strip()[-300:]
            raise Unavailable(f"{argv[0]} failed in the VM (exit {result.exit_code}): {said}")
        return result.stdout


def _button(number: int) -> str:
    try:
        return _BUTTONS[number]
    except KeyError:
        raise InvalidArgs(f"no pointer button {number}") from None


def _abs(axis: str, value: int) -> dict[str, Any]:
    return {"type": "abs", "data": {"axis": axis, "value": max(0, min(ABS_MAX, value))}}


def _btn(button: str, down: bool) -> dict[str, Any]:
    return {"type": "btn", "data": {"button": button, "down": down}}


def _key(code: str, down: bool) -> dict[str, Any]:
    return {"type": "key", "data": {"key": {"type": "qcode", "data": code}, "down": down}}
