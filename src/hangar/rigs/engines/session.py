"""The engine interface: what the browser rig's verbs and the live view ask of one running browser engine.

One ``EngineSession`` talks to one engine over its own protocol (engine A: the DevTools protocol; engine B:
WebDriver BiDi; engine C: classic W3C WebDriver) through one TCP endpoint: the rig's forward to guest port
9222, or a port on the host when the engine runs there (tests, benchmarks). Coordinates are CSS pixels of the
viewport; keys are DOM key names (``Enter``, ``a``, ``Control+a``; ``keys.py`` maps them per protocol).

Errors come from ``hangar.errors``: ``NotFound`` for a selector matching nothing, ``Timeout``-like waits answer
``False`` rather than raising, ``Unavailable`` when the engine went away, ``Refused`` when the page says no
(a navigation to a host the egress gate refuses surfaces as the engine's own error page, not an exception).
Everything a page returns (DOM, titles, console text, clipboard text) is untrusted; the verb layer fences it.

A session acts on one top-level page at a time, the current page. A page may open others (``target="_blank"``,
``window.open``) and close itself (``window.close()``): the session then follows, as a person's browser does, so
the new page becomes current, and when the current page closes the most recent remaining one does (a new page on
the home page when none is left). ``follow_pages`` settles this; ``take_page_changes`` says what changed;
``pages`` lists the pages the session knows and ``switch_page`` makes one of them current (a person's page list).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from hangar.errors import Unavailable

MouseButton = Literal["left", "middle", "right"]
ExtractKind = Literal["a11y", "dom", "console"]
ImageMime = Literal["image/png", "image/jpeg"]


@dataclass(frozen=True)
class Page:
    """Where the top-level page is after a verb that navigates."""

    url: str
    title: str
    status: int | None = None  # the main document's HTTP status where the engine reports it


@dataclass(frozen=True)
class Still:
    """One encoded image of the page."""

    mime: ImageMime
    data: bytes
    width: int
    height: int


@dataclass(frozen=True)
class Frame:
    """One live-view frame, always JPEG, stamped with ``time.monotonic()`` when the engine produced it."""

    data: bytes
    width: int
    height: int
    captured_at: float


PageChangeKind = Literal["opened", "closed", "home", "switched"]


@dataclass(frozen=True)
class PageChange:
    """The session moved to another top-level page. ``opened``: a page opened a new one, now current; ``closed``:
    the current page closed and the most recent remaining page is current; ``home``: the last page closed and a new
    page on the home page is current; ``switched``: someone chose another page of the session (``switch_page``).
    ``url`` and ``title`` are the new current page's (page-controlled text)."""

    kind: PageChangeKind
    url: str
    title: str


@dataclass(frozen=True)
class PageEntry:
    """One top-level page the session knows: its id (a DevTools target, a BiDi context, a WebDriver window
    handle), where it is, and whether the verbs act on it. ``url`` and ``title`` are the page's to choose;
    ``seen`` is False when the engine could not read them without moving to the page (engine C: classic
    WebDriver reads only the current window), and they are then what they were when the page was last current."""

    id: str
    url: str
    title: str
    current: bool
    seen: bool = True


@dataclass(frozen=True)
class Extracted:
    kind: ExtractKind
    content: str
    approximation: bool = False  # a DOM-derived a11y tree (engines B and C)
    note: str | None = None  # what the extract cannot contain (engine C's console misses output during load)


class EngineSession(ABC):
    """A connected browser engine with one top-level page. ``aclose`` is safe to call twice."""

    engine: ClassVar[str]  # "engine-a"
    hard_reload: ClassVar[bool]  # False: a hard reload is performed as a normal one
    real_drop: ClassVar[bool]  # True: ``drop_files`` fires a real drop event on the page

    # -- navigation ---------------------------------------------------------------------------------------

    @abstractmethod
    async def navigate(self, url: str) -> Page:
        """Load ``url`` in the page and wait for its load event (bounded by the engine's page-load timeout)."""

    @abstractmethod
    async def reload(self, hard: bool) -> Page:
        """Reload; ``hard`` bypasses the cache only where ``hard_reload`` is True."""

    @abstractmethod
    async def stop_loading(self) -> None: ...

    @abstractmethod
    async def history(self, direction: Literal["back", "forward"]) -> Page: ...

    @abstractmethod
    async def current(self) -> Page:
        """The page's URL and title now (no status)."""

    # -- pointer and keyboard -----------------------------------------------------------------------------

    @abstractmethod
    async def locate(self, selector: str) -> tuple[int, int]:
        """Scroll the first element matching the CSS ``selector`` into view and return its centre;
        ``NotFound`` when nothing matches."""

    @abstractmethod
    async def mouse_move(self, x: int, y: int) -> None: ...

    @abstractmethod
    async def mouse_button(self, down: bool, x: int | None, y: int | None, button: MouseButton = "left") -> None:
        """Press or release ``button`` at (x, y), or where the pointer is when no point is given."""

    @abstractmethod
    async def click(self, x: int, y: int, button: MouseButton = "left") -> None: ...

    @abstractmethod
    async def drag(self, start: tuple[int, int], end: tuple[int, int]) -> None:
        """Press at ``start``, move in steps to ``end``, release (HTML drag and drop fires where supported)."""

    @abstractmethod
    async def scroll(self, x: int, y: int, delta_x: int, delta_y: int) -> None: ...

    @abstractmethod
    async def key(self, combo: str) -> None:
        """Press and release a DOM key name with its modifiers (``Control+a``)."""

    @abstractmethod
    async def key_event(self, down: bool, key: str) -> None:
        """One key going down or up (the live view relays a person's keys one event at a time)."""

    @abstractmethod
    async def type_text(self, text: str) -> None:
        """Type ``text`` into whatever has focus, as keystrokes or inserted text."""

    @abstractmethod
    async def fill(self, selector: str, value: str) -> None:
        """Replace the value of the form field matching ``selector`` (``NotFound`` when none), firing the input
        and change events a person's typing fires."""

    @abstractmethod
    async def focus(self, selector: str) -> None:
        """Focus the element matching ``selector``; ``NotFound`` when none."""

    # -- observing ----------------------------------------------------------------------------------------

    @abstractmethod
    async def extract(self, kind: ExtractKind) -> Extracted: ...

    @abstractmethod
    async def screenshot(self, full_page: bool, max_width: int, max_height: int) -> Still:
        """The viewport (or the whole document), scaled down to fit ``max_width`` x ``max_height`` keeping the
        aspect ratio, never scaled up."""

    @abstractmethod
    async def viewport(self) -> tuple[int, int]:
        """The layout viewport's width and height in CSS pixels."""

    @abstractmethod
    async def set_viewport(self, width: int, height: int) -> None: ...

    @abstractmethod
    async def wait_for(self, selector: str, timeout_s: float) -> bool:
        """True once an element matches ``selector``; False when ``timeout_s`` passed first."""

    @abstractmethod
    async def clipboard_read(self) -> str | None:
        """The clipboard's text through the page's clipboard API; None when the page has no clipboard API (not a
        secure context)."""

    @abstractmethod
    async def clipboard_write(self, text: str) -> bool:
        """Put ``text`` on the clipboard through the page; False when the page has no clipboard API."""

    # What the last image call has to say: why ``clipboard_write_image`` answered False or
    # ``clipboard_read_image`` None when the page has a clipboard, or what a write changed (a JPEG kept as PNG).
    # Each call sets it just before it returns, so read it right after the call (no await in between).
    clipboard_image_note: str | None = None

    @abstractmethod
    async def clipboard_write_image(self, mime: ImageMime, data: bytes) -> bool:
        """Put one PNG or JPEG image (at most ``clipboard_image.MAX_IMAGE_BYTES``) on the clipboard through the
        page's async clipboard API, as the only item; False, with ``clipboard_image_note`` saying why, when the
        page has no clipboard API (not a secure context), the engine's clipboard cannot hold images, or the page
        refused. A clipboard taking PNG only gets a JPEG converted to PNG in the page (the note says so)."""

    @abstractmethod
    async def clipboard_read_image(self) -> tuple[ImageMime, bytes] | None:
        """The clipboard's PNG or JPEG image through the page; None when it holds none, when the page has no
        clipboard API, or when the image is over the size cap (``clipboard_image_note`` says which)."""

    # -- pages ----------------------------------------------------------------------------------------------

    @abstractmethod
    async def follow_pages(self) -> None:
        """Settle which top-level page the verbs act on: a page opened since becomes current (once it loaded, within
        a bound), and when the current page closed the most recent remaining one does, or a new page on the home
        page when none is left. The verb layer calls it before and after every verb, the live view after a
        person's input; engines that hear of pages through events (A, B) also follow on their own. A live view's
        frames follow the current page."""

    @abstractmethod
    def take_page_changes(self) -> list[PageChange]:
        """The changes of current page since the last call (the latest few), oldest first."""

    @abstractmethod
    async def pages(self) -> list[PageEntry]:
        """The top-level pages the session knows (those it follows: the first page and the pages opened from
        them), the current one marked, least recently current first."""

    @abstractmethod
    async def switch_page(self, page_id: str) -> Page:
        """Make the known page ``page_id`` current (``NotFound`` when the session knows no such page); the live
        view's frames move to it, and the change is reported as ``switched``."""

    # -- files and the live view --------------------------------------------------------------------------

    async def drop_files(self, guest_paths: Sequence[str], x: int, y: int) -> None:
        """Fire a real drop of the files at (x, y). Only engines with ``real_drop`` can; the others refuse, and
        callers point a file input at the files instead (``set_input_files``)."""
        raise Unavailable(f"{self.engine} cannot take a real file drop; point a file input at the files instead")

    @abstractmethod
    async def set_input_files(self, x: int, y: int, guest_paths: Sequence[str]) -> bool:
        """Point the file input at (x, y) (or the one a label there is for) at ``guest_paths``; False when no
        file input is there."""

    @abstractmethod
    def frames(self, max_width: int, max_height: int) -> AsyncIterator[Frame]:
        """Live-view frames as the page changes (engine A: pushed on repaint; B: polled, at most 6 a second;
        C: polled stills transcoded to JPEG on the host), scaled to fit. Iterate with ``async for``; closing the
        iterator stops the capture."""

    @abstractmethod
    async def aclose(self) -> None: ...
