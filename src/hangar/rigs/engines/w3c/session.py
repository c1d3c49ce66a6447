"""What engines B and C share: pointer and keyboard verbs as W3C input actions, and the verbs a page script does
best (locating, filling, waiting, the DOM-derived accessibility approximation, the clipboard API).

A subclass supplies three primitives over its protocol: ``_call`` runs one of the ``js/`` scripts in the page,
``_perform`` dispatches input action sources, and ``_console`` reads the console buffer. The page's answers are
untrusted; shapes are checked before use and anything else is reported as the page refusing.
"""

from __future__ import annotations

import asyncio
import time
from abc import abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, ClassVar

from hangar.errors import InvalidArgs, NotFound, Refused
from hangar.rigs.engines import clipboard_image as clip
from hangar.rigs.engines.launch import LaunchContext
from hangar.rigs.engines.pages import FollowsPages, PageFollower
from hangar.rigs.engines.session import (
    EngineSession,
    Extracted,
    ExtractKind,
    Frame,
    ImageMime,
    MouseButton,
    Page,
)
from hangar.rigs.engines.w3c import actions as w3c_actions
from hangar.rigs.engines.w3c.errors import EngineTimeout

Json = str | int | float | bool | None | list[Any] | dict[str, Any]

MAX_DOM_CHARS = 1_000_000
MAX_A11Y_CHARS = 200_000
TYPED_AS_KEYS = 256  # longer text is inserted at the caret in one go (keystrokes would take minutes)
KEYS_PER_CALL = 256
READY_TIMEOUT_S = 30.0  # after a history step, how long to wait for the page to finish loading
CONSOLE_ENTRIES = 1000  # the console buffer keeps the latest entries within both bounds
CONSOLE_CHARS = 256_000
CONSOLE_ENTRY_CHARS = 4000
IMAGE_CALL_S = 120.0  # a 16 MB clipboard image is decoded, re-encoded and read back by the page


def console_extract(entries: Iterable[tuple[str, str]], dropped: int, note: str | None = None) -> Extracted:
    """The console buffer as text, one ``[level] text`` line per entry, saying what it cannot contain."""
    content = "\n".join(f"[{level}] {text}" for level, text in entries)
    notes = [note] if note else []
    if dropped:
        notes.append(
            f"{dropped} earlier entries were dropped (the buffer keeps the latest {CONSOLE_ENTRIES} entries "
            f"and {CONSOLE_CHARS} characters)"
        )
    return Extracted("console", content, note="; ".join(notes) or None)


class W3CSession(FollowsPages, EngineSession):
    """Verbs common to the WebDriver engines (BiDi and classic). ``first_page`` is the id of the page the session
    starts on (a BiDi context, a classic window handle); the session follows pages from it (``pages.py``)."""

    def __init__(self, first_page: str) -> None:
        self._pointer: tuple[int, int] = (0, 0)
        self._pages = PageFollower(self, first_page)
        self._home_url = "about:blank"  # where a new page opens when the last one closed (set at boot)
        self._viewport = (0, 0)  # the size every page the session moves to is given (kept by set_viewport)

    # -- the protocol primitives --------------------------------------------------------------------------

    @abstractmethod
    async def _call(self, name: str, *args: Json, timeout_s: float = 30.0) -> Any:
        """Run ``js/<name>.js`` with ``args`` in the page and return its JSON result."""

    @abstractmethod
    async def _perform(self, sources: list[w3c_actions.Source]) -> None:
        """Dispatch input action sources to the page."""

    @abstractmethod
    async def _console(self) -> Extracted: ...

    @abstractmethod
    async def _discover_pages(self) -> None:
        """Learn of pages opened or closed so far (``pages.PageHost``)."""

    @abstractmethod
    async def _show_page(self, page: str) -> None:
        """Make ``page`` the one the verbs act on, at the session's viewport."""

    @abstractmethod
    async def _open_home(self) -> str:
        """A new page on the home page, when no page is left; its id."""

    @abstractmethod
    def _engine_gone(self) -> bool: ...

    async def boot(self, ctx: LaunchContext) -> None:
        """Where a freshly connected session starts: a viewport of the boot display, on the home page."""
        self._home_url = ctx.home_url
        await self.set_viewport(ctx.width, ctx.height)
        await self.navigate(ctx.home_url)

    # -- following pages (pages.py; each engine supplies the discovery, the switch and the new home page) -------

    async def _load_state(self) -> tuple[str, str]:
        state = await self._page_state()
        return str(state.get("ready", "")), str(state.get("url", ""))

    async def _describe_pages(self, pages: list[str], current: str | None) -> dict[str, tuple[str, str]]:
        """The current page's URL and title (engines that can read other pages without moving to them say
        more)."""
        if current is None:
            return {}
        page = await self.current()
        return {current: (page.url, page.title)}

    # -- shared verbs -------------------------------------------------------------------------------------

    async def _page_state(self) -> dict[str, Any]:
        state = await self._call("page_state")
        if not isinstance(state, dict):
            raise Refused("the page did not report its state")
        return state

    async def current(self) -> Page:
        state = await self._page_state()
        return Page(url=str(state.get("url", "")), title=str(state.get("title", "")))

    async def _settle(self) -> None:
        """Wait until the page finished loading (after a history step, which resolves before the load)."""
        await self._call("wait_ready", int(READY_TIMEOUT_S * 1000), timeout_s=READY_TIMEOUT_S + 5)

    async def _selector_call(self, verb: str, selector: str, *args: Json) -> dict[str, Any]:
        """Run ``js/element.js``: ``verb`` on the first element matching ``selector``."""
        result = await self._call("element", selector, verb, *args)
        if not isinstance(result, dict):
            raise Refused(f"the page answered {verb} with something unexpected")
        if "invalid" in result:
            raise InvalidArgs(f"{selector!r} is not a valid CSS selector", field="selector")
        if result.get("missing"):
            raise NotFound(f"no element matches the selector {selector!r}")
        return result

    async def locate(self, selector: str) -> tuple[int, int]:
        result = await self._selector_call("locate", selector)
        x, y = result.get("x"), result.get("y")
        if not isinstance(x, int | float) or not isinstance(y, int | float):
            raise Refused("the page did not report where the element is")
        return int(x), int(y)

    async def mouse_move(self, x: int, y: int) -> None:
        await self._perform(w3c_actions.move(x, y))
        self._pointer = (x, y)

    async def mouse_button(self, down: bool, x: int | None, y: int | None, button: MouseButton = "left") -> None:
        at = (x, y) if x is not None and y is not None else None
        await self._perform(w3c_actions.press(down, button, at))
        if at is not None:
            self._pointer = at

    async def click(self, x: int, y: int, button: MouseButton = "left") -> None:
        await self._perform(w3c_actions.click(x, y, button))
        self._pointer = (x, y)

    async def drag(self, start: tuple[int, int], end: tuple[int, int]) -> None:
        await self._perform(w3c_actions.drag(start, end))
        self._pointer = end

    async def scroll(self, x: int, y: int, delta_x: int, delta_y: int) -> None:
        await self._perform(w3c_actions.wheel(x, y, delta_x, delta_y))

    async def key(self, combo: str) -> None:
        await self._perform(w3c_actions.chord(combo))

    async def key_event(self, down: bool, key: str) -> None:
        await self._perform(w3c_actions.key_event(down, key))

    async def type_text(self, text: str) -> None:
        if len(text) > TYPED_AS_KEYS and await self._call("insert_text", text) is True:
            return
        for start in range(0, len(text), KEYS_PER_CALL):
            sources = w3c_actions.typing(text[start : start + KEYS_PER_CALL])
            if sources:
                await self._perform(sources)

    async def fill(self, selector: str, value: str) -> None:
        result = await self._selector_call("fill", selector, value)
        if "notEditable" in result:
            raise InvalidArgs(f"{selector!r} matches a {result['notEditable']}, not a text field", field="selector")

    async def focus(self, selector: str) -> None:
        await self._selector_call("focus", selector)

    async def extract(self, kind: ExtractKind) -> Extracted:
        if kind == "console":
            return await self._console()
        if kind == "a11y":
            tree = await self._call("a11y_approx", MAX_A11Y_CHARS)
            return Extracted("a11y", str(tree), approximation=True)
        result = await self._call("dom", MAX_DOM_CHARS)
        if not isinstance(result, dict):
            raise Refused("the page did not return its markup")
        html, total = str(result.get("html", "")), result.get("total")
        note = None
        if isinstance(total, int) and total > len(html):
            note = f"the markup is cut at {len(html)} of {total} characters"
        return Extracted("dom", html, note=note)

    async def viewport(self) -> tuple[int, int]:
        state = await self._page_state()
        return int(state["width"]), int(state["height"])

    async def wait_for(self, selector: str, timeout_s: float) -> bool:
        result = await self._call("wait_for", selector, round(timeout_s * 1000), timeout_s=timeout_s + 10)
        if isinstance(result, dict) and "invalid" in result:
            raise InvalidArgs(f"{selector!r} is not a valid CSS selector", field="selector")
        return result is True

    async def _clipboard(self, op: str, text: str) -> dict[str, Any] | None:
        result = await self._call("clipboard", op, text)
        if not isinstance(result, dict):
            raise Refused("the page answered the clipboard call with something unexpected")
        if result.get("absent"):
            return None
        if "denied" in result:
            raise Refused(f"the page's clipboard API refused: {str(result['denied'])[:200]}")
        return result

    async def clipboard_read(self) -> str | None:
        result = await self._clipboard("read", "")
        return None if result is None else str(result.get("text", ""))

    async def clipboard_write(self, text: str) -> bool:
        return await self._clipboard("write", text) is not None

    # Why this engine's clipboard can hold no image at all, when it cannot (then no write is attempted: a write
    # would empty the clipboard and keep nothing).
    clipboard_images_absent: ClassVar[str | None] = None

    async def clipboard_write_image(self, mime: ImageMime, data: bytes) -> bool:
        note: str | None
        if self.clipboard_images_absent is not None:
            ok, note = False, self.clipboard_images_absent
        else:
            answer = await self._call("clipboard_image", "write", clip.encode(data), mime, 0, timeout_s=IMAGE_CALL_S)
            ok, note = clip.written(self.engine, mime, answer)
        self.clipboard_image_note = note
        return ok

    async def clipboard_read_image(self) -> tuple[ImageMime, bytes] | None:
        note: str | None
        answer = await self._call("clipboard_image", "read", "", "", clip.MAX_IMAGE_BYTES, timeout_s=IMAGE_CALL_S)
        image, note = clip.read_back(answer)
        self.clipboard_image_note = note
        return image


FRAME_INTERVAL_S = 1 / 6  # polled live views take at most six stills a second


async def polled_frames(
    capture: Callable[[], Awaitable[tuple[bytes, int, int]]],
    interval_s: float = FRAME_INTERVAL_S,
    encode: Callable[[bytes, int, int], Awaitable[bytes]] | None = None,
) -> AsyncIterator[Frame]:
    """Frames from a still taken every ``interval_s`` at most; a still equal to the previous one is skipped
    (nothing changed on the page), so an idle page sends nothing. ``capture`` returns the still and the frame's
    size; ``encode`` turns a still into a JPEG of that size when the engine's stills are not already it (after
    the comparison, so unchanged stills cost no transcoding)."""
    previous: bytes | None = None
    next_at = 0.0
    while True:
        delay = next_at - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        next_at = time.monotonic() + interval_s
        try:
            data, width, height = await capture()
        except (NotFound, Refused, EngineTimeout):
            continue  # the page is between documents: try again next round (a gone engine still ends it)
        if data == previous:
            continue
        previous = data
        captured_at = time.monotonic()
        jpeg = await encode(data, width, height) if encode is not None else data
        yield Frame(jpeg, width, height, captured_at)
