"""The live view lane: a browser rig's page as moving pictures for people (``/rig/live/<rigId>``), and the
person's mouse, keys, wheel, typing and window size back while they hold control. A computer rig's desktop is
served on the same lane and wire by ``desktopview`` (registered with ``register_view``).

Wire (a WebSocket; the URL is minted by ``rig.liveViewUrl`` with a signed ``rig-watch`` target, so a URL to
watch a rig can neither drop files into it nor open a terminal):

- Server to client, binary: one frame = a 16-byte big-endian header, then the JPEG bytes::

      sequence u32 | width u16 | height u16 | capture time f64 (unix milliseconds)

  ``width`` x ``height`` are the JPEG's pixels (the page scaled to fit the size asked for, never more than
  2560x1600); ``sequence`` counts the rig's frames, so a gap says frames were skipped for a slow watcher.
- Server to client, text: notices ``{"type": "hello", engine, controller, you}``, ``{"type": "viewport",
  width, height}`` (the page's CSS pixels: input coordinates are in these), ``{"type": "control", controller,
  you}``, ``{"type": "readonly", message}`` (input arrived without control and was ignored), ``{"type":
  "pages", pages: [{pageId, url, title, current, stale}]}`` (the session's pages, the current one marked: sent
  once read and again when they change, ``pagefeed``; ``url`` and ``title`` are the pages' own), ``{"type":
  "error", code, message}`` (fatal ones close the lane with 4000 + the HTTP status).
- Client to server, text: ``{"type": "mouse", action: "move"|"down"|"up", x, y, button?}``, ``{"type": "key",
  action: "down"|"up", key}`` (DOM key names), ``{"type": "wheel", x, y, deltaX, deltaY}``, ``{"type": "text",
  text}``, ``{"type": "resize", width, height}`` (the page's viewport, 320x240 to 2560x1600): input, applied only
  while the sender holds control (``rig.takeControl``) through a credential that may change things (a read-only
  one, such as an OAuth grant marked read only, is answered ``forbidden`` even while its person holds control
  through another); ``{"type": "view", width, height}``: the largest frame the client wants to draw (anyone may
  send it; query ``w`` and ``h`` give the first).

One ``frames()`` capture per rig feeds every watcher (``FrameHub``): it runs at the largest size any watcher
asked for, and each watcher holds only the newest frame it has not sent yet, so a slow watcher skips stale frames
instead of queueing them. An open live view pins the rig against parking and idle reaping like a watch lane (the
TTL still applies), and closes when its person's membership ends. Input is audited as counts (typed text as a
length and SHA-256) when the lane closes, never as content.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import struct
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal

from starlette.websockets import WebSocket, WebSocketDisconnect

from hangar.errors import HangarError, InvalidArgs, Refused, Unavailable
from hangar.rigs.actions.base import MAX_TEXT
from hangar.rigs.engines.keys import key_spec
from hangar.rigs.engines.session import EngineSession, Frame, MouseButton
from hangar.rigs.lanes.access import LaneAccess, authorize
from hangar.rigs.lanes.pagefeed import following, page_row
from hangar.rigs.lanes.socketlane import credential, fail, guarded
from hangar.rigs.lanes.viewinput import InputGate, send_json
from hangar.rigs.live.notices import ControlNotice, PhaseNotice, RigNotice
from hangar.rigs.live.rigs import LiveRig
from hangar.rigs.model import Phase, Surface
from hangar.rpc.access import Revocable

log = logging.getLogger(__name__)

HEADER = struct.Struct(">IHHd")  # sequence, width, height, capture time (unix ms): 16 bytes
MAX_VIEW = (2560, 1600)  # the person's lane; agent stills stay 1280x800 (the verb layer's cap)
DEFAULT_VIEW = (1280, 800)
MIN_VIEWPORT = (320, 240)
MAX_COORD = 100_000
MAX_DELTA = 100_000


# -- frames -------------------------------------------------------------------------------------------------


def wall_ms(captured_at: float) -> float:
    """A ``time.monotonic()`` stamp as unix milliseconds, so a browser can compare it with ``Date.now()``."""
    return (time.time() - (time.monotonic() - captured_at)) * 1000.0


def encode_frame(seq: int, frame: Frame) -> bytes:
    return HEADER.pack(seq & 0xFFFFFFFF, frame.width, frame.height, wall_ms(frame.captured_at)) + frame.data


def decode_header(data: bytes) -> tuple[int, int, int, float]:
    """(sequence, width, height, capture unix ms) of an encoded frame."""
    if len(data) < HEADER.size:
        raise InvalidArgs(f"a live-view frame starts with a {HEADER.size}-byte header", field="frame")
    seq, width, height, ms = HEADER.unpack_from(data)
    return seq, width, height, ms


def negotiate(width: int, height: int) -> tuple[int, int]:
    """The frame size a watcher gets for the size it asked: at most 2560x1600, at least 1x1."""
    return max(1, min(width, MAX_VIEW[0])), max(1, min(height, MAX_VIEW[1]))


def _whole(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidArgs(f"{name} must be a whole number from {low} to {high}", field=name)
    return value


def view_size(width: str | None, height: str | None) -> tuple[int, int]:
    """The first frame size from the query string (``w``, ``h``), negotiated."""
    if width is None and height is None:
        return DEFAULT_VIEW
    size: list[int] = []
    for raw, name in ((width, "w"), (height, "h")):
        if raw is None or not raw.isdigit():
            raise InvalidArgs(f"{name} must be a whole number of pixels (give both w and h, or neither)", field=name)
        size.append(_whole(int(raw), name, 1, 100_000))
    return negotiate(size[0], size[1])


# -- input --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MouseInput:
    action: Literal["move", "down", "up"]
    x: int
    y: int
    button: MouseButton = "left"


@dataclass(frozen=True)
class KeyInput:
    down: bool
    key: str


@dataclass(frozen=True)
class WheelInput:
    x: int
    y: int
    delta_x: int
    delta_y: int


@dataclass(frozen=True)
class TextInput:
    text: str


@dataclass(frozen=True)
class ResizeInput:
    width: int
    height: int


@dataclass(frozen=True)
class ViewRequest:
    """Not input: the largest frame the client wants to draw."""

    width: int
    height: int


InputEvent = MouseInput | KeyInput | WheelInput | TextInput | ResizeInput
ClientMessage = InputEvent | ViewRequest

_TYPES = "mouse, key, wheel, text, resize or view"


def parse_message(text: str) -> ClientMessage:
    """One text frame from the client; ``InvalidArgs`` naming the field when it is not one of the lane's."""
    try:
        msg: Any = json.loads(text)
    except ValueError:
        raise InvalidArgs(f"text frames are JSON objects with a type ({_TYPES})", field="type") from None
    if not isinstance(msg, dict):
        raise InvalidArgs(f"text frames are JSON objects with a type ({_TYPES})", field="type")
    kind = msg.get("type")
    if kind == "mouse":
        action = msg.get("action")
        if action not in ("move", "down", "up"):
            raise InvalidArgs("mouse.action must be move, down or up", field="action")
        button = msg.get("button", "left")
        if button not in ("left", "middle", "right"):
            raise InvalidArgs("mouse.button must be left, middle or right", field="button")
        x, y = _whole(msg.get("x"), "x", 0, MAX_COORD), _whole(msg.get("y"), "y", 0, MAX_COORD)
        return MouseInput(action, x, y, button)
    if kind == "key":
        action = msg.get("action")
        if action not in ("down", "up"):
            raise InvalidArgs("key.action must be down or up", field="action")
        key = msg.get("key")
        if not isinstance(key, str) or not key:
            raise InvalidArgs("key.key must be a DOM key name (Enter, a, ArrowLeft...)", field="key")
        return KeyInput(action == "down", key_spec(key).key)  # refuses what is not a key name
    if kind == "wheel":
        return WheelInput(
            _whole(msg.get("x"), "x", 0, MAX_COORD),
            _whole(msg.get("y"), "y", 0, MAX_COORD),
            _whole(msg.get("deltaX", 0), "deltaX", -MAX_DELTA, MAX_DELTA),
            _whole(msg.get("deltaY", 0), "deltaY", -MAX_DELTA, MAX_DELTA),
        )
    if kind == "text":
        value = msg.get("text")
        if not isinstance(value, str) or not 1 <= len(value) <= MAX_TEXT:
            raise InvalidArgs(f"text.text must be a string of 1 to {MAX_TEXT} characters", field="text")
        return TextInput(value)
    if kind == "resize":
        return ResizeInput(
            _whole(msg.get("width"), "width", MIN_VIEWPORT[0], MAX_VIEW[0]),
            _whole(msg.get("height"), "height", MIN_VIEWPORT[1], MAX_VIEW[1]),
        )
    if kind == "view":
        width, height = _whole(msg.get("width"), "width", 1, 100_000), _whole(msg.get("height"), "height", 1, 100_000)
        return ViewRequest(*negotiate(width, height))
    raise InvalidArgs(f"type must be one of {_TYPES}", field="type")


async def apply_input(session: EngineSession, event: InputEvent) -> None:
    if isinstance(event, MouseInput):
        if event.action == "move":
            await session.mouse_move(event.x, event.y)
        else:
            await session.mouse_button(event.action == "down", event.x, event.y, event.button)
    elif isinstance(event, KeyInput):
        await session.key_event(event.down, event.key)
    elif isinstance(event, WheelInput):
        await session.scroll(event.x, event.y, event.delta_x, event.delta_y)
    elif isinstance(event, TextInput):
        await session.type_text(event.text)
    else:
        await session.set_viewport(event.width, event.height)
    if _may_switch(event):
        # A person's click or key may open a page or close this one: the view (and the agent) move with it.
        await session.follow_pages()


def _may_switch(event: InputEvent) -> bool:
    """A release ends a click or a key press (where pages open and close); typed text may press Enter."""
    if isinstance(event, MouseInput):
        return event.action == "up"
    if isinstance(event, KeyInput):
        return not event.down
    return isinstance(event, TextInput)


# -- one capture, many watchers -----------------------------------------------------------------------------


class Watcher:
    """One open live view: the newest frame it has not sent yet (older ones are dropped, never queued)."""

    def __init__(self, size: tuple[int, int]) -> None:
        self.size = size
        self.dropped = 0
        self._latest: tuple[int, Frame] | None = None
        self._ready = asyncio.Event()
        self._failed: HangarError | None = None

    def offer(self, seq: int, frame: Frame) -> None:
        if self._latest is not None:
            self.dropped += 1
        self._latest = (seq, frame)
        self._ready.set()

    def fail(self, err: HangarError) -> None:
        self._failed = err
        self._ready.set()

    async def next(self) -> tuple[int, Frame]:
        while True:
            await self._ready.wait()
            self._ready.clear()
            if self._failed is not None:
                raise self._failed
            if self._latest is not None:
                latest, self._latest = self._latest, None
                return latest


class FrameHub:
    """The one ``frames()`` capture of a rig's engine, fanned out to its watchers. It runs while anyone
    watches, at the largest size asked for, and restarts when that size changes.

    An engine captures one stream at a time, so a capture runs only while it holds ``_engine``: a restart's new
    capture waits until the one before it has stopped, however many restarts were asked in between (each replaced
    one leaves without capturing, whether it was waiting or had not begun)."""

    def __init__(self, session: EngineSession) -> None:
        self.session = session
        self.watchers: set[Watcher] = set()
        self.viewport: tuple[int, int] | None = None
        self.latest: tuple[int, Frame] | None = None
        self._seq = 0
        self._size: tuple[int, int] | None = None
        self._pump: asyncio.Task[None] | None = None
        self._engine = asyncio.Lock()

    def join(self, watcher: Watcher) -> None:
        self.watchers.add(watcher)
        if self.latest is not None:
            watcher.offer(*self.latest)  # something to draw before the page next repaints
        self._retarget()

    def leave(self, watcher: Watcher) -> None:
        self.watchers.discard(watcher)
        self._retarget()

    def resize(self, watcher: Watcher, size: tuple[int, int]) -> None:
        watcher.size = size
        self._retarget()

    @property
    def size(self) -> tuple[int, int] | None:
        return self._size

    def _retarget(self) -> None:
        size = (max(w.size[0] for w in self.watchers), max(w.size[1] for w in self.watchers)) if self.watchers else None
        if size == self._size and (self._pump is None or not self._pump.done()):
            return
        self._size = size
        previous, self._pump = self._pump, None
        if previous is not None:
            _stop(previous)
        if size is not None:
            self._pump = asyncio.create_task(self._run(size), name="rigs:liveview")

    async def refresh_viewport(self) -> None:
        self.viewport = await self.session.viewport()

    async def _run(self, size: tuple[int, int]) -> None:
        async with self._engine:  # the capture before this one has stopped
            await self._capture(size)

    async def _capture(self, size: tuple[int, int]) -> None:
        frames = self.session.frames(*size)
        dims: tuple[int, int] | None = None
        try:
            async for frame in frames:
                if (frame.width, frame.height) != dims:
                    dims = (frame.width, frame.height)
                    await self.refresh_viewport()  # the page's size may have changed with the frame's
                self._seq += 1
                self.latest = (self._seq, frame)
                for watcher in list(self.watchers):
                    watcher.offer(self._seq, frame)
            raise Unavailable("the browser engine stopped sending frames")
        except asyncio.CancelledError:
            raise
        except HangarError as err:
            for watcher in list(self.watchers):
                watcher.fail(err)
        except Exception as exc:
            log.warning("rigs: live view capture ended on %r", exc)
            for watcher in list(self.watchers):
                watcher.fail(Unavailable("the browser engine's live view failed"))
        finally:
            close = getattr(frames, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()

    async def aclose(self) -> None:
        """Stop capturing; returns once no capture of this hub runs in the engine (a replaced one still stopping
        included)."""
        if self._pump is not None:
            _stop(self._pump)
            await asyncio.wait([self._pump])
            self._pump = None
        async with self._engine:
            pass


def _stop(pump: asyncio.Task[None]) -> None:
    """Ask a capture to stop, once: cancelling it again would cut its clean-up short (the engine's stop, without
    which the engine keeps capturing and refuses the next view)."""
    if not pump.done() and not pump.cancelling():
        pump.cancel()


_HUBS: dict[LiveRig, FrameHub] = {}
_CLOSING: dict[LiveRig, asyncio.Task[None]] = {}  # a hub whose last watcher left, its capture still stopping


@contextlib.asynccontextmanager
async def watching(
    live: LiveRig, session: EngineSession, size: tuple[int, int]
) -> AsyncIterator[tuple[FrameHub, Watcher]]:
    """Join the rig's frame hub (made by the first watcher, stopped by the last). A view opened while the last
    one's capture is still stopping waits for it: an engine captures one stream at a time."""
    hub = _HUBS.get(live)
    if hub is None or hub.session is not session:
        closing = _CLOSING.get(live)
        if closing is not None:
            await asyncio.wait([closing])
        hub = _HUBS.get(live)  # another view may have made one meanwhile
        if hub is None or hub.session is not session:
            hub = _HUBS[live] = FrameHub(session)
    watcher = Watcher(size)
    hub.join(watcher)
    try:
        yield hub, watcher
    finally:
        hub.leave(watcher)
        if not hub.watchers and _HUBS.get(live) is hub:
            del _HUBS[live]
            closing = _CLOSING[live] = asyncio.ensure_future(hub.aclose())
            try:
                await asyncio.shield(closing)
            finally:
                if _CLOSING.get(live) is closing:
                    del _CLOSING[live]


# -- the lane -----------------------------------------------------------------------------------------------

# How one live view of a rig is served once its person is let in: a browser's here; other surfaces' by the lane
# modules the routes register (``register_view``: the computer's is ``desktopview``).
ViewServer = Callable[[WebSocket, "LaneAccess", tuple[int, int], Revocable], Awaitable[None]]
SURFACE_VIEWS: dict[Surface, ViewServer] = {}


def register_view(surface: Surface, serve: ViewServer) -> None:
    SURFACE_VIEWS[surface] = serve


@dataclass
class InputCounts:
    frames: int = 0
    inputs: dict[str, int] = field(default_factory=dict)
    ignored: int = 0
    typed_len: int = 0
    typed: Any = field(default_factory=hashlib.sha256)

    def count(self, event: InputEvent) -> None:
        name = type(event).__name__.removesuffix("Input").lower()
        self.inputs[name] = self.inputs.get(name, 0) + 1
        if isinstance(event, TextInput):
            data = event.text.encode()
            self.typed.update(data)
            self.typed_len += len(data)

    def details(self, dropped: int) -> dict[str, Any]:
        return {
            "frames": self.frames,
            "dropped": dropped,
            "inputs": dict(sorted(self.inputs.items())),
            "ignored": self.ignored,
            "text": {"length": self.typed_len, "sha256": self.typed.hexdigest()},
        }


async def live_view_lane(ws: WebSocket) -> None:
    rig_id = ws.path_params["rig_id"]
    await ws.accept()
    try:
        size = view_size(ws.query_params.get("w"), ws.query_params.get("h"))
        principal, token = await credential(ws)
        access = await authorize(
            ws.app.state.ctx, "watch", rig_id, ws.query_params.get("sig"), principal, mutating=False
        )
        serve = _serve if access.live.surface is Surface.browser else SURFACE_VIEWS.get(access.live.surface)
        if serve is None:
            shown = " rigs and ".join(["browser", *(s.value for s in SURFACE_VIEWS)])
            raise Refused(f"the live view shows {shown} rigs; rig {rig_id} is a {access.live.surface.value} rig")
    except HangarError as err:
        await fail(ws, err)
        return
    try:
        async with guarded(ws.app.state.ctx, access, token) as guard:
            await serve(ws, access, size, guard)
    except HangarError as err:
        await fail(ws, err)


async def _serve(ws: WebSocket, access: LaneAccess, size: tuple[int, int], guard: Revocable) -> None:
    mgr, principal, me = access.manager, access.principal, access.principal.user_id
    counts = InputCounts()
    async with mgr.watch(access.ws, access.live.id) as (live, events):
        async with mgr.acting(access.ws, live.id, principal, mutating=False, what="live view") as (_l, handle):
            session = handle.browser()
        await mgr.log_action(access.ws, live.id, principal, "liveview.open", {"width": size[0], "height": size[1]})
        async with watching(live, session, size) as (hub, watcher), following(live, session) as feed:
            if hub.viewport is None:
                await hub.refresh_viewport()
            await send_json(
                ws,
                {"type": "hello", "engine": session.engine, "controller": live.controller, "you": me,
                 "maxWidth": MAX_VIEW[0], "maxHeight": MAX_VIEW[1]},
            )  # fmt: skip

            async def pump_frames() -> None:
                told: tuple[int, int] | None = None
                while True:
                    seq, frame = await watcher.next()
                    await guard.admit()  # nothing reaches a person whose access ended, however recently
                    if hub.viewport is not None and hub.viewport != told:
                        told = hub.viewport
                        await send_json(ws, {"type": "viewport", "width": told[0], "height": told[1]})
                    await ws.send_bytes(encode_frame(seq, frame))
                    counts.frames += 1

            async def pump_pages() -> None:
                async for pages in feed.changes():
                    await guard.admit()
                    await send_json(ws, {"type": "pages", "pages": [page_row(p) for p in pages]})

            async def pump_input() -> None:
                gate = InputGate(ws, access, live, counts, guard)
                while True:
                    msg = await ws.receive()
                    if msg["type"] == "websocket.disconnect":
                        return
                    text = msg.get("text")
                    if text is None:
                        await send_json(ws, {"type": "error", **InvalidArgs("send input as JSON text frames",
                                                                               field="type").to_dict()})  # fmt: skip
                        continue
                    try:
                        parsed = parse_message(text)
                        if isinstance(parsed, ViewRequest):
                            hub.resize(watcher, (parsed.width, parsed.height))
                            continue
                        if not await gate.admit():
                            continue
                        await apply_input(session, parsed)
                        if _may_switch(parsed):
                            feed.poke()  # a click or a key may have moved the page: the address bar follows
                        counts.count(parsed)
                        if isinstance(parsed, ResizeInput):
                            await hub.refresh_viewport()
                    except HangarError as err:
                        await send_json(ws, {"type": "error", **err.to_dict()})

            try:
                await run_pumps(
                    [pump_frames(), pump_events(ws, live, events, guard, me), pump_input(), pump_pages()],
                    guard,
                    live.id,
                )
            finally:
                with contextlib.suppress(HangarError):
                    await mgr.log_action(
                        access.ws, live.id, principal, "liveview.close", counts.details(watcher.dropped)
                    )
    with contextlib.suppress(Exception):
        await ws.close(code=1000)


async def pump_events(
    ws: WebSocket, live: LiveRig, events: asyncio.Queue[RigNotice], guard: Revocable, me: str | None
) -> None:
    """Tell the person of control changes; end the view when the rig ends."""
    while True:
        event = await events.get()
        await guard.admit()
        if isinstance(event, ControlNotice):
            await send_json(ws, {"type": "control", "controller": event.controller, "you": me})
        elif isinstance(event, PhaseNotice) and event.phase in (Phase.closed, Phase.failed, Phase.closing):
            raise Unavailable(f"rig {live.id} is {event.phase.value}")


async def run_pumps(pumps: list[Coroutine[Any, Any, None]], guard: Revocable, rig_id: str) -> None:
    """Run a live view's pumps until one ends (the person left, the rig ended) or the person's access does; a
    ``HangarError`` that ended it is raised for the lane to tell; the others are stopped either way."""
    tasks = [asyncio.create_task(pump) for pump in pumps]
    try:
        ending: set[asyncio.Future[Any]] = {*tasks, guard.ended}
        done, _ = await asyncio.wait(ending, return_when=asyncio.FIRST_COMPLETED)
        if guard.ended in done:
            raise guard.ended.result()
        for task in done:
            exc = task.exception()
            if isinstance(exc, HangarError):
                raise exc
            if exc is not None and not isinstance(exc, WebSocketDisconnect | OSError | RuntimeError):
                log.warning("rigs: live view of %s ended on %r", rig_id, exc)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
