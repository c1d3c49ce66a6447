"""Boot an X11 desktop inside a rig and drive it, through nothing but ``RigExec``: an X server without a screen
(``X_SERVER``, no TCP listener) and Openbox run as long-lived ``RigExec.run`` tasks, as a browser engine's
processes do (``engineboot``); every verb is one short program in the rig (xdotool over XTEST, xwd, xrandr, xclip, and
``xguest``'s helper), so a backend other than the enclosure drives a desktop with this module unchanged.

RandR sets the mode (a mode of any size is added first): ``set_display`` is a mode change and the windows stay.
Coordinates are checked against the current mode before anything is pressed; key names are checked by X itself
(``xguest``) before xdotool runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from hangar.core.confine import ExecResult
from hangar.errors import HangarError, InvalidArgs, Unavailable
from hangar.rigs.backends.capabilities import Command, Desktop, RigExec, Selection
from hangar.rigs.backends.engineboot import GUEST_HOME, JOINED_OUTPUT, LOG_BYTES, TAIL_CHARS
from hangar.rigs.backends.xguest import KEYS_UNKNOWN_EXIT, PROGRAM
from hangar.rigs.engines.xwd import Still, still_of

log = logging.getLogger("hangar.rigs.desktop")

DISPLAY = ":1"
VNC_SOCKET = "/tmp/.hangar-vnc"  # the desktop's frames for a live view: a Unix socket inside the rig, no TCP port
# The X server: TigerVNC's Xvnc, an X server without a screen like Xvfb that also changes its mode through RandR
# (Debian's Xvfb keeps the size it started with), listening on no TCP port for X11 or for RFB.
X_SERVER: tuple[str, ...] = (
    "Xvnc", DISPLAY, "-depth", "24", "-nolisten", "tcp", "-rfbport", "-1", "-rfbunixpath", VNC_SOCKET,
    "-rfbunixmode", "0600", "-SecurityTypes", "None", "-AlwaysShared", "-AcceptSetDesktopSize=0",
)  # fmt: skip
MAX_SCREEN = (2560, 1600)  # the largest mode set_display can choose (the human lane's bound)
BOOT_TIMEOUT_S = 120.0  # a bound against a hang only: a loaded host starts an X server slowly
STEP_TIMEOUT_S = 30.0  # one short program (a click, a still); typing and holds add their own length
TYPE_DELAY_MS = 4  # between keystrokes of `type`: xdotool's default (12) makes long text slow
MAX_SELECTION_BYTES = 1 << 20  # what a selection read keeps
SELECTION_TARGETS: dict[str, tuple[str, ...]] = {
    "clipboard": ("UTF8_STRING", "STRING", "TEXT"),
    "primary": ("UTF8_STRING", "STRING", "TEXT"),
    "xdnd": ("text/uri-list", "UTF8_STRING", "text/plain;charset=utf-8", "text/plain", "STRING"),
}
_WM_READY = (
    "sh", "-c",
    'i=0; until xprop -root _NET_SUPPORTING_WM_CHECK 2>/dev/null | grep -q "window id"; do '
    'i=$((i+1)); [ "$i" -gt "$1" ] && exit 1; sleep 0.05; done', "wait-for-wm", str(int(BOOT_TIMEOUT_S * 20)),
)  # fmt: skip
# A mode of any size: added to the screen's output first when the X server does not list it yet.
_SET_MODE = (
    "sh", "-c",
    'm="$1x$2"; out=$(xrandr | awk \'/ connected/ {print $1; exit}\'); '
    'if ! xrandr | grep -q "^ *$m "; then '
    'xrandr --newmode "$m" 60 "$1" "$1" "$1" "$1" "$2" "$2" "$2" "$2" && xrandr --addmode "$out" "$m" || exit 1; fi; '
    'exec xrandr --output "$out" --mode "$m" --fb "$m"', "set-mode",
)  # fmt: skip
_MOUSE = re.compile(r"X=(\d+)\s+Y=(\d+)")
_SCREEN = re.compile(r"current (\d+) x (\d+)")


@dataclass
class RigDesktopSession(Desktop):
    """A desktop in a rig: its X server and window manager, and the verbs as programs beside them."""

    handle: RigExec
    _tasks: list[tuple[str, asyncio.Task[ExecResult]]] = field(default_factory=list)
    _output: dict[str, bytearray] = field(default_factory=dict)
    _size: tuple[int, int] | None = None
    _closed: bool = False

    async def launch(self, display: tuple[int, int]) -> None:
        """Start the X server in the boot mode and Openbox, and wait until the window manager manages the
        screen."""
        width, height = display
        self._start("x server", (*X_SERVER, "-geometry", f"{width}x{height}"))
        self._start("openbox", ("sh", "-c", _wait_display("exec openbox --sm-disable")))
        try:
            result = await self._run(_WM_READY, timeout_s=BOOT_TIMEOUT_S + 10)
        except Unavailable:
            self._check_running()
            raise
        if result.exit_code != 0:
            self._check_running()
            raise Unavailable(f"the desktop's window manager did not start in time: {self.log()[-TAIL_CHARS:]}")
        self._size = display  # the X server started in this mode

    def _start(self, name: str, argv: tuple[str, ...]) -> None:
        buffer = self._output.setdefault(name, bytearray())

        async def collect(chunk: bytes) -> None:
            buffer.extend(chunk)
            if len(buffer) > LOG_BYTES:
                del buffer[: len(buffer) - LOG_BYTES]

        run = self.handle.run(self._command((*JOINED_OUTPUT, *argv), None), collect)
        self._tasks.append((name, asyncio.create_task(run, name=f"desktop:{name}")))

    def _command(self, argv: tuple[str, ...], timeout_s: float | None, stdin: bytes | None = None) -> Command:
        return Command(argv, GUEST_HOME, {"DISPLAY": DISPLAY}, stdin, timeout_s)

    async def _run(
        self,
        argv: tuple[str, ...],
        *,
        timeout_s: float = STEP_TIMEOUT_S,
        stdin: bytes | None = None,
        on_stdout: Callable[[bytes], Awaitable[None]] | None = None,
    ) -> ExecResult:
        if self._closed:
            raise Unavailable("the desktop was closed")
        result = await self.handle.run(self._command(argv, timeout_s, stdin), on_stdout)
        if result.timed_out:
            raise Unavailable(f"the desktop did not finish {argv[0]} in {timeout_s:g} s")
        return result

    async def _checked(self, argv: tuple[str, ...], *, timeout_s: float = STEP_TIMEOUT_S,
                       stdin: bytes | None = None) -> str:  # fmt: skip
        result = await self._run(argv, timeout_s=timeout_s, stdin=stdin)
        if result.exit_code != 0:
            self._check_running()
            said = (result.stderr or result.stdout).strip()[-TAIL_CHARS:] or "(no output)"
            raise Unavailable(f"the desktop's {argv[0]} failed (exit {result.exit_code}): {said}")
        return result.stdout

    def _check_running(self) -> None:
        for name, task in self._tasks:
            if task.done():
                raise Unavailable(f"the desktop's {name} ended: {self.log()[-TAIL_CHARS:]}")

    def alive(self) -> bool:
        return bool(self._tasks) and not any(task.done() for _, task in self._tasks)

    async def size(self) -> tuple[int, int]:
        if self._size is None:
            out = await self._checked(("xrandr", "--current"))
            found = _SCREEN.search(out)
            if found is None:
                raise Unavailable("the desktop did not say its display size")
            self._size = int(found[1]), int(found[2])
        return self._size

    async def screenshot(self, max_width: int, max_height: int) -> Still:
        dump = bytearray()

        async def collect(chunk: bytes) -> None:
            dump.extend(chunk)

        result = await self._run(("xwd", "-root", "-silent"), on_stdout=collect)
        if result.exit_code != 0:
            self._check_running()
            raise Unavailable(f"the desktop's xwd failed (exit {result.exit_code}): {result.stderr[-TAIL_CHARS:]}")
        still = still_of(bytes(dump), max_width, max_height)
        # The root window is the screen in its current mode, whoever in the rig set it last.
        self._size = still.display_width, still.display_height
        return still

    async def cursor(self) -> tuple[int, int]:
        found = _MOUSE.search(await self._checked(("xdotool", "getmouselocation", "--shell")))
        if found is None:
            raise Unavailable("the desktop did not say where the pointer is")
        return int(found[1]), int(found[2])

    async def check_point(self, x: int, y: int, field: str) -> None:
        width, height = await self.size()
        if not (0 <= x < width and 0 <= y < height):
            raise InvalidArgs(
                f"{field}: [{x}, {y}] lies outside the {width}x{height} display (x 0 to {width - 1}, "
                f"y 0 to {height - 1})",
                field=field,
            )

    async def pointer(self, steps: Sequence[str]) -> None:
        argv: list[str] = ["xdotool"]
        for step in steps:
            argv.extend(step.split())
        await self._checked(tuple(argv))

    async def key(self, combo: str, hold_s: float | None, field: str) -> None:
        names = combo.split("+")
        xdo = ("key", "--clearmodifiers", combo) if hold_s is None else (
            "keydown", combo, "sleep", f"{hold_s:.3f}", "keyup", combo)  # fmt: skip
        result = await self._run(
            ("python3", "-c", PROGRAM, "keys", *names, "--", *xdo), timeout_s=STEP_TIMEOUT_S + (hold_s or 0)
        )
        if result.exit_code == KEYS_UNKNOWN_EXIT:
            unknown = result.stdout.strip()[:200]
            raise InvalidArgs(f"{field}: X11 has no key named {unknown} (in {combo!r})", field=field)
        if result.exit_code != 0:
            self._check_running()
            raise Unavailable(f"the desktop's xdotool failed (exit {result.exit_code}): "
                              f"{result.stderr.strip()[-TAIL_CHARS:]}")  # fmt: skip

    async def type_text(self, text: str) -> None:
        # Text goes on stdin, never on a command line another process of the rig could read.
        budget = STEP_TIMEOUT_S + len(text) * TYPE_DELAY_MS * 3 / 1000
        await self._checked(
            ("xdotool", "type", "--clearmodifiers", "--delay", str(TYPE_DELAY_MS), "--file", "-"),
            timeout_s=budget,
            stdin=text.encode(),
        )

    async def set_size(self, width: int, height: int) -> tuple[int, int]:
        if not (1 <= width <= MAX_SCREEN[0] and 1 <= height <= MAX_SCREEN[1]):
            raise InvalidArgs(f"the display can be at most {MAX_SCREEN[0]}x{MAX_SCREEN[1]}", field="display")
        self._size = None
        await self._checked((*_SET_MODE, str(width), str(height)))
        return await self.size()

    async def read_selection(self, selection: Selection) -> str:
        out = bytearray()

        async def collect(chunk: bytes) -> None:
            if len(out) < MAX_SELECTION_BYTES:
                out.extend(chunk[: MAX_SELECTION_BYTES - len(out)])

        argv = ("python3", "-c", PROGRAM, "read", selection, str(MAX_SELECTION_BYTES), *SELECTION_TARGETS[selection])
        result = await self._run(argv, on_stdout=collect)
        if result.exit_code != 0:
            self._check_running()
            raise Unavailable(f"the desktop could not read its {selection} selection: {result.stderr[-TAIL_CHARS:]}")
        return out.decode("utf-8", "replace")

    async def write_clipboard(self, data: bytes, target: str = "UTF8_STRING") -> None:
        # xclip stays behind to serve the selection (it leaves when another program takes it); its output is
        # closed so the call returns once it is serving.
        await self._checked(
            ("sh", "-c", 'exec xclip -selection clipboard -target "$1" -in >/dev/null 2>&1', "write-clipboard", target),
            stdin=data,
        )

    def log(self) -> str:
        parts = []
        for name, buffer in self._output.items():
            parts.append(f"--- {name} ---\n{buffer.decode('utf-8', 'replace')}")
        return "\n".join(parts)

    async def aclose(self) -> None:
        """Stop the window manager and the X server (cancelling a run kills its process group). Safe twice."""
        if self._closed:
            return
        self._closed = True
        for _, task in self._tasks:
            task.cancel()
        await asyncio.gather(*(task for _, task in self._tasks), return_exceptions=True)


def _wait_display(then: str) -> str:
    """A shell line that waits until the X server answers, then runs ``then``."""
    tries = int(BOOT_TIMEOUT_S * 20)
    return f"i=0; until xdpyinfo >/dev/null 2>&1 || [ $i -ge {tries} ]; do i=$((i+1)); sleep 0.05; done; {then}"


async def boot_desktop(handle: RigExec, display: tuple[int, int]) -> RigDesktopSession:
    """Start a desktop in the rig at ``display``; everything started is stopped on failure."""
    desktop = RigDesktopSession(handle)
    try:
        await desktop.launch(display)
    except BaseException:
        with contextlib.suppress(HangarError):
            await desktop.aclose()
        raise
    return desktop
