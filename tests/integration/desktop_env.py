"""What a desktop test reads back from inside a computer rig: ``xev`` recording the input events the desktop was
given (``Recorder``), a shell command run in the guest on its display (``guest``), and a program holding the drag
selection as a toolkit does while a drag is live (``drag_source``). Shared by the rig's own tests and the web
client's desktop tab tests."""

from __future__ import annotations

import asyncio
import contextlib
import re
from dataclasses import dataclass, field
from typing import Any

from hangar.rigs.backends.base import Command
from hangar.rigs.backends.desktopboot import DISPLAY
from hangar.rigs.backends.engineboot import GUEST_HOME
from tests.integration.rigs_env import RigsEnv

RECORDER = "hangar-recorder"  # the xev window's title
# A bound against hangs only (tests run in parallel on a loaded machine): how long a test waits for the recorder
# to print an event.
EVENT_BOUND_S = 90.0
STARTS = 3  # recorders started before a test says none hears the pointer
_EVENT_HEAD = re.compile(r"^(\w+) event, serial")
_ROOT = re.compile(r"root:\((-?\d+),(-?\d+)\)")
_BUTTON = re.compile(r"button (\d+),")
_KEYSYM = re.compile(r"\(keysym 0x[0-9a-f]+, ([^)]+)\)")
_TIME = re.compile(r"time (\d+),")
_POSITION = re.compile(r"Position: (\d+),(\d+)")
_CHARS = re.compile(r'XLookupString gives \d+ bytes: (?:\(\w+\) "(.*)")?$', re.M)


@dataclass
class Event:
    kind: str
    text: str

    @property
    def root(self) -> tuple[int, int]:
        found = _ROOT.search(self.text)
        assert found, self.text
        return int(found[1]), int(found[2])

    @property
    def button(self) -> int:
        found = _BUTTON.search(self.text)
        assert found, self.text
        return int(found[1])

    @property
    def key(self) -> str:
        found = _KEYSYM.search(self.text)
        assert found, self.text
        return found[1]

    @property
    def time(self) -> int:
        found = _TIME.search(self.text)
        assert found, self.text
        return int(found[1])

    @property
    def chars(self) -> str:
        found = _CHARS.search(self.text)
        return found[1] if found and found[1] is not None else ""


@dataclass
class Recorder:
    """``xev`` in the rig, full-screen-ish at the top left and focused, its output kept as it comes."""

    env: RigsEnv
    rig: str
    output: bytearray = field(default_factory=bytearray)
    task: asyncio.Task[Any] | None = None

    async def start(self) -> None:
        """The recorder, placed, focused and hearing the pointer. A recorder that hears nothing within its share
        of the bound is ended and started again (at most ``STARTS`` times): on a loaded machine the window manager
        may still be starting, or placing windows, when the first one maps. When none hears, the failure says what
        the desktop looked like each time."""
        seen: list[str] = []
        for _ in range(STARTS):
            try:
                await self._start_once(EVENT_BOUND_S / STARTS)
                self.output.clear()
                return
            except TimeoutError:
                seen.append(await self._desktop_state())
                await self.stop()
                await guest(self.env, self.rig, "pkill -x xev || true")  # its window goes with it
                self.output.clear()
        raise AssertionError(f"no recorder heard the pointer in {STARTS} starts; the desktop each time: {seen}")

    async def _start_once(self, bound_s: float) -> None:
        handle = (await self.env.manager.get_live(self.env.ws, self.rig)).handle
        assert handle is not None

        async def collect(chunk: bytes) -> None:
            self.output.extend(chunk)

        argv = ("xev", "-name", RECORDER, "-geometry", "1000x700+0+0", "-event", "keyboard", "-event", "button",
                "-event", "mouse")  # fmt: skip
        self.task = asyncio.create_task(handle.run(Command(argv, GUEST_HOME, {"DISPLAY": DISPLAY}), collect))
        # The window exists, sits at the top left (the window manager may place it again once after it maps) and
        # has the keyboard focus, and it hears the pointer, before any verb is sent.
        find = f"xdotool search --sync --name '^{RECORDER}$'"
        async with asyncio.timeout(bound_s):
            while True:
                await guest(self.env, self.rig, f"{find} windowmove --sync 0 0 windowactivate --sync")
                await asyncio.sleep(0.2)
                found = _POSITION.search(await guest(self.env, self.rig, f"{find} getwindowgeometry"))
                if found and int(found[1]) <= 20 and int(found[2]) <= 80:
                    break
            # The recorder hears the pointer: moved between two points (a pointer already at one of them, where
            # the previous test's recorder left it, makes no event for that one) until a motion arrives.
            while not self.events("MotionNotify"):
                self._check_running()
                await guest(self.env, self.rig, "xdotool mousemove 480 380 mousemove 500 400")
                await asyncio.sleep(0.5)

    async def _desktop_state(self) -> str:
        """Where the pointer is, the top-level windows and the window manager, and what the recorder printed."""
        with contextlib.suppress(Exception):
            state = await guest(
                self.env, self.rig,
                "xdotool getmouselocation; xwininfo -root -children | head -40; pgrep -a openbox || echo no openbox",
            )  # fmt: skip
            return f"{state} | the recorder printed {self.output.decode(errors='replace')[-1500:]!r}"
        return "(the desktop could not be read)"

    def _check_running(self) -> None:
        """The recorder still runs: one that ended says why, instead of a wait for events that cannot come."""
        if self.task is not None and self.task.done():
            raise AssertionError(
                f"the recorder ended: {self.task!r}; it printed {self.output.decode(errors='replace')[-2000:]!r}"
            )

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)

    def events(self, *kinds: str) -> list[Event]:
        found = []
        for block in self.output.decode("utf-8", "replace").split("\n\n"):
            head = _EVENT_HEAD.match(block.strip())
            if head and (not kinds or head[1] in kinds):
                found.append(Event(head[1], block.strip()))
        return found

    async def until(self, count: int, *kinds: str) -> list[Event]:
        """The events of ``kinds`` once at least ``count`` arrived (xev prints as the X server delivers)."""
        try:
            async with asyncio.timeout(EVENT_BOUND_S):
                while len(got := self.events(*kinds)) < count:
                    self._check_running()
                    await asyncio.sleep(0.05)
        except TimeoutError:
            raise AssertionError(
                f"{count} {'/'.join(kinds)} events did not arrive in {EVENT_BOUND_S:g} s; the recorder printed "
                f"{self.output.decode(errors='replace')[-2000:]!r}"
            ) from None
        return got


async def guest(env: RigsEnv, rig: str, command: str, stdin: bytes | None = None) -> str:
    """Run a shell command in the rig as the rig user on its display (the test's own look inside the guest)."""
    handle = (await env.manager.get_live(env.ws, rig)).handle
    assert handle is not None
    result = await handle.exec(f"export DISPLAY={DISPLAY}; {command}", timeout_s=60, stdin=stdin)
    assert result.exit_code == 0, (command, result)
    return result.stdout


# The start of the guest programs below: Xlib through ctypes, with the display and root window calls typed.
XLIB = r"""
import ctypes, sys
x = ctypes.CDLL("libX11.so.6")
x.XOpenDisplay.restype = ctypes.c_void_p
x.XOpenDisplay.argtypes = [ctypes.c_char_p]
x.XDefaultRootWindow.restype = ctypes.c_ulong
x.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
"""

# A program in the guest that owns the drag selection (as a toolkit does while a drag is live) and hands its
# payload out as text/uri-list only; it prints "owned" once it holds the selection.
DRAG_SOURCE = (
    XLIB
    + r"""
x.XCreateSimpleWindow.restype = ctypes.c_ulong
x.XCreateSimpleWindow.argtypes = [ctypes.c_void_p, ctypes.c_ulong] + [ctypes.c_int] * 2 + [ctypes.c_uint] * 3 + [
    ctypes.c_ulong] * 2
x.XInternAtom.restype = ctypes.c_ulong
x.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
x.XSetSelectionOwner.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
x.XNextEvent.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
x.XFlush.argtypes = [ctypes.c_void_p]
x.XChangeProperty.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_int,
    ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
x.XSendEvent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long, ctypes.c_void_p]

class Request(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
                ("display", ctypes.c_void_p), ("owner", ctypes.c_ulong), ("requestor", ctypes.c_ulong),
                ("selection", ctypes.c_ulong), ("target", ctypes.c_ulong), ("property", ctypes.c_ulong),
                ("time", ctypes.c_ulong)]

class Notify(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
                ("display", ctypes.c_void_p), ("requestor", ctypes.c_ulong), ("selection", ctypes.c_ulong),
                ("target", ctypes.c_ulong), ("property", ctypes.c_ulong), ("time", ctypes.c_ulong)]

class Event(ctypes.Union):
    _fields_ = [("type", ctypes.c_int), ("req", Request), ("pad", ctypes.c_long * 24)]

payload = sys.argv[1].encode()
dpy = x.XOpenDisplay(None)
win = x.XCreateSimpleWindow(dpy, x.XDefaultRootWindow(dpy), 0, 0, 1, 1, 0, 0, 0)
sel = x.XInternAtom(dpy, b"XdndSelection", 0)
uris = x.XInternAtom(dpy, b"text/uri-list", 0)
x.XSetSelectionOwner(dpy, sel, win, 0)
x.XFlush(dpy)
print("owned", flush=True)
ev = Event()
while True:
    x.XNextEvent(dpy, ctypes.byref(ev))
    if ev.type != 30:
        continue
    r = ev.req
    n = Notify(31, 0, 1, None, r.requestor, r.selection, r.target, 0, r.time)
    if r.target == uris:
        x.XChangeProperty(dpy, r.requestor, r.property, uris, 8, 0, payload, len(payload))
        n.property = r.property
    x.XSendEvent(dpy, r.requestor, 0, 0, ctypes.byref(n))
    x.XFlush(dpy)
"""
)


async def drag_source(env: RigsEnv, rig: str, payload: str) -> asyncio.Task[Any]:
    """A program in the rig holding the drag selection with ``payload``, once it holds it (cancel to end it)."""
    handle = (await env.manager.get_live(env.ws, rig)).handle
    assert handle is not None
    said = bytearray()

    async def collect(chunk: bytes) -> None:
        said.extend(chunk)

    argv = ("python3", "-c", DRAG_SOURCE, payload)
    source = asyncio.create_task(handle.run(Command(argv, GUEST_HOME, {"DISPLAY": DISPLAY}), collect))
    async with asyncio.timeout(EVENT_BOUND_S):
        while b"owned" not in said:
            assert not source.done(), source
            await asyncio.sleep(0.05)
    return source


# What the X server says is held down (XQueryPointer's mask), read in the guest: "shift button1", or "".
POINTER_STATE = (
    XLIB
    + r"""
ul, i, ui = ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_uint)
x.XQueryPointer.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ul, ul, i, i, i, i, ui]
d = x.XOpenDisplay(None)
w = [ctypes.c_ulong(), ctypes.c_ulong()]
n = [ctypes.c_int() for _ in range(4)]
mask = ctypes.c_uint()
x.XQueryPointer(d, x.XDefaultRootWindow(d), *[ctypes.byref(v) for v in w + n], ctypes.byref(mask))
held = [name for bit, name in ((1, "shift"), (1 << 8, "button1"), (1 << 10, "button3")) if mask.value & bit]
print(" ".join(held))
"""
)


async def pointer_state(env: RigsEnv, rig: str) -> str:
    return (await guest(env, rig, "python3 -", stdin=POINTER_STATE.encode())).strip()
