"""Engine C: WebKitGTK's MiniBrowser driven by ``WebKitWebDriver`` over classic W3C WebDriver.

WebKitGTK is a GTK port with no headless mode, so the plan runs an ``Xvfb`` display of its own (2560x1600, so
the person's live view can grow the window; no TCP listener) whose number is the driver's port: unique among
the launches on one host, and fixed (``:9222``) inside a rig. The driver waits for the display's socket before
it starts, so the browser it spawns at session creation always finds the display. Web processes run without
WebKit's bubblewrap sandbox (``WEBKIT_DISABLE_SANDBOX_THIS_IS_DANGEROUS``): the rig is the sandbox, and the
enclosure refuses the user namespaces bubblewrap needs.

The dev CA: WebKitGTK verifies TLS with GnuTLS through glib-networking (2.74 here), which reads only the
compiled-in bundle ``/etc/ssl/certs/ca-certificates.crt`` and honours no environment variable; so
``ctx.ca_file`` is not read here: the rig backend binds a bundle holding the CA over that path.

What engine C cannot do, and what it does instead:
- hard reload: classic WebDriver has one refresh; a hard reload is a normal one.
- status: classic WebDriver does not report the document's HTTP status; ``Page.status`` stays None.
- console: no console feed; ``js/console_hook.js`` is installed after every navigate, reload and history step
  (and when the console is read on a page without it), so output logged while the page loaded is missed, and
  every console extract says so in its ``note``.
- accessibility: no platform tree over WebDriver; ``extract("a11y")`` is the DOM-derived approximation.
- full-page stills: the driver's element screenshot is clipped to the viewport, so the window is resized to
  the document's height for the capture and restored afterwards (the page sees one resize there and back).
- scaled stills and the live view: stills are PNG; scaling and the live view's JPEG frames are made by the
  host's ffmpeg (``transcode``), which is required for them; frames are polled, at most six a second.
- history: ``back`` or ``forward`` with nowhere to go leaves the page where it is (the driver says nothing;
  a step that shows no sign of navigating within two seconds is taken as that).
- pending loads: the driver answers no screenshot while a navigation is pending (both stills and the live view
  wait for the load to commit); the session's page-load strategy is "none" so scripts (``stop_loading``)
  still run then, and the navigation verbs wait for the load themselves.
- real file drops: none; ``set_input_files`` sends the guest paths to the file input as keys.
- HTML drag and drop: ``drag`` moves a real pointer (pointer-driven drags work) and ``dragstart`` fires, but
  no ``drop`` reaches the page from synthesized input.
- clipboard images: WebKitGTK's clipboard takes PNG only (``ClipboardItem.supports("image/jpeg")`` is false and a
  JPEG item is written as nothing), so a JPEG is converted to PNG in the page; a paste event hands the page no
  file for an image (its default paste inserts it as an ``<img>``).
- new pages: no events; the window handles are listed whenever pages are settled (before and after each verb) and
  a new handle is switched to. The driver ends its session when the last window closes, so the home page then
  comes in a new WebDriver session: a new browser, without the old one's cookies and storage.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import secrets
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal

from hangar.errors import NotFound, Refused, Unavailable
from hangar.rigs.engines.launch import Endpoint, EngineProcess, EngineRecipe, LaunchContext, LaunchPlan
from hangar.rigs.engines.pixels import fit, image_size
from hangar.rigs.engines.scripts import script
from hangar.rigs.engines.session import Extracted, Frame, Page, Still
from hangar.rigs.engines.w3c import actions as w3c_actions
from hangar.rigs.engines.w3c.errors import EngineTimeout
from hangar.rigs.engines.w3c.session import (
    CONSOLE_CHARS,
    CONSOLE_ENTRIES,
    CONSOLE_ENTRY_CHARS,
    Json,
    W3CSession,
    console_extract,
    polled_frames,
)
from hangar.rigs.engines.webkit.transcode import ffmpeg_path, transcode_png
from hangar.rigs.engines.webkit.webdriver import ELEMENT_KEY, WebDriverClient

log = logging.getLogger(__name__)

ENGINE = "engine-c"
MINIBROWSER = "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser"
SCREEN = "2560x1600x24"
DISPLAY_WAIT_S = 20  # how long the driver waits for the display's socket
NAVIGATION_TIMEOUT_S = 60.0
SCRIPT_TIMEOUT_S = 60.0  # longer than the longest wait_for (30 s)
MAX_FULL_PAGE_HEIGHT = 16_384
PAGE_LOAD_STRATEGY = "none"  # the navigation verbs wait for loads themselves (see _navigation)
NAVIGATION_POLL_S = 0.05
NAVIGATION_PROBE_TIMEOUT_S = 5.0
HISTORY_GRACE_S = 2.0
ENDING_S = 10.0  # how long the driver may take to end a session whose last window closed
CONSOLE_NOTE = (
    "engine-c captures console output only after each navigation; output logged while the page loaded is missed"
)


def display_for(port: int) -> str:
    return f":{port}"


def plan(ctx: LaunchContext) -> LaunchPlan:
    display = display_for(ctx.port)
    socket = f"/tmp/.X11-unix/X{ctx.port}"
    xvfb = EngineProcess("xvfb", ("Xvfb", display, "-screen", "0", SCREEN, "-nolisten", "tcp"))
    tries = DISPLAY_WAIT_S * 20
    driver = EngineProcess(
        "webkitwebdriver",
        ("sh", "-c",
         f'i=0; while [ ! -S "$1" ] && [ $i -lt {tries} ]; do i=$((i+1)); sleep 0.05; done; shift; exec "$@"',
         "wait-for-display", socket, "WebKitWebDriver", "--host=127.0.0.1", f"--port={ctx.port}"),
        {"DISPLAY": display, "WEBKIT_DISABLE_SANDBOX_THIS_IS_DANGEROUS": "1", "NO_AT_BRIDGE": "1"},
    )  # fmt: skip
    # A display killed earlier (same port, or the rig's engine restarted) leaves its lock and socket behind; the
    # driver would take that socket for a live display. Clear them when the lock's process is gone.
    lock = f"/tmp/.X{ctx.port}-lock"
    stale = EngineProcess(
        "xvfb-stale",
        ("sh", "-c", 'if [ -f "$1" ] && ! kill -0 "$(tr -d " " < "$1")" 2>/dev/null; then rm -f "$1" "$2"; fi',
         "clear-stale-display", lock, socket),
    )  # fmt: skip
    return LaunchPlan(files={}, setup=(stale,), processes=(xvfb, driver))


_WINDOW_GONE = ("no_such_window", "invalid_session_id")  # the current window closed (with the session, if last)
_ELEMENT_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")  # a driver element id goes into a URL path: nothing else


class WebKitSession(W3CSession):
    engine = ENGINE
    hard_reload = False  # classic WebDriver has one refresh
    real_drop = False

    def __init__(self, client: WebDriverClient, window: str, capabilities: dict[str, Any]) -> None:
        super().__init__(window)
        self._client = client
        self._capabilities = capabilities  # to start a new session when the last window closed with the old one
        self._ended = False  # the driver ended the session: its last window closed
        self._closed = False

    # -- primitives ---------------------------------------------------------------------------------------

    async def _call(self, name: str, *args: Json, timeout_s: float = 30.0) -> Any:
        body = {"script": f"return ({script(name)}).apply(null, arguments);", "args": list(args)}
        return await self._client.command("POST", "/execute/sync", body, timeout_s)

    async def _perform(self, sources: list[w3c_actions.Source]) -> None:
        await self._client.command("POST", "/actions", {"actions": sources})

    async def _hook_console(self) -> None:
        await self._call("console_hook", CONSOLE_ENTRIES, CONSOLE_CHARS, CONSOLE_ENTRY_CHARS)

    async def _console(self) -> Extracted:
        result = await self._call("console_read")
        if not isinstance(result, dict):
            raise Refused("the page did not return its console buffer")
        note = CONSOLE_NOTE
        if not result.get("hooked"):
            await self._hook_console()
            note += "; this page was reached without a navigation verb, so its console is captured from now on"
        entries = [
            (str(entry[0]), str(entry[1]))
            for entry in result.get("entries") or []
            if isinstance(entry, list) and len(entry) == 2
        ]
        dropped = result.get("dropped")
        return console_extract(entries, dropped if isinstance(dropped, int) else 0, note)

    # -- following pages ----------------------------------------------------------------------------------

    async def _discover_pages(self) -> None:
        """Classic WebDriver sends no events: the window handles now, against those the session knows."""
        handles = await self._unless_ended("GET", "/window/handles")
        if self._ended:
            handles = []
        if not isinstance(handles, list):
            raise Unavailable("engine-c: the driver listed its windows as something unexpected")
        for known in self._pages.known():
            if known not in handles:
                self._pages.closed(known)
        for handle in handles:
            self._pages.opened(str(handle))  # a known one is left as it is

    async def _show_page(self, page: str) -> None:
        await self._client.command("POST", "/window", {"handle": page})
        if self._viewport != (0, 0):
            await self.set_viewport(*self._viewport)  # a new window has the browser's default size

    async def _unless_ended(self, method: str, path: str, body: object = None) -> Any:
        """A command that may meet the session ending (its last window just closed): None, with the session
        marked ended, when the driver says the session is gone."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ENDING_S
        while True:
            try:
                return await self._client.command(method, path, body)
            except Unavailable as exc:
                if exc.detail_code == "invalid_session_id":
                    self._ended = True  # the last window closed, and the driver ended the session
                    return None
                # Right after the last window closed, the driver answers "unknown error" while it ends the
                # session (then "invalid session id"): ask again for a moment.
                if exc.detail_code != "unknown_error" or loop.time() > deadline:
                    raise
                await asyncio.sleep(NAVIGATION_POLL_S)

    async def _open_home(self) -> str:
        """A new WebDriver session (its browser starts on a new window) when the last window ended the old one;
        otherwise a new window. Either way on the home page, at the session's viewport."""
        created = None if self._ended else await self._unless_ended("POST", "/window/new", {"type": "tab"})
        if created is None:  # the session had ended, or ended meanwhile
            await self._client.start(self._capabilities)
            self._ended = False
        else:
            await self._client.command("POST", "/window", {"handle": created["handle"]})
        if self._viewport != (0, 0):
            await self.set_viewport(*self._viewport)
        await self.navigate(self._home_url)
        return str(await self._client.command("GET", "/window"))

    def _engine_gone(self) -> bool:
        return self._closed

    # -- navigation ---------------------------------------------------------------------------------------

    async def _navigation(self, path: str, body: object, *, history: bool = False) -> Page:
        """Start a navigation and wait for it ourselves: the session's page-load strategy is "none", because
        with "normal" the driver holds every command (a script calling ``window.stop()`` included) until a
        pending load ends, so a load could never be stopped."""
        token = secrets.token_hex(8)
        before = await self._nav_state(token, mark=True)
        try:
            await self._client.command("POST", path, body, NAVIGATION_TIMEOUT_S)
        except Unavailable as exc:
            if exc.detail_code != "unknown_error":
                raise
        if path == "/url" and isinstance(body, dict) and "#" in str(body.get("url")) and body.get("url") == before:
            pass  # the same URL with a fragment: a scroll within the document, nothing loads
        else:
            await self._loaded(token, str(before), history=history, watch_driver=path == "/url")
        await self._hook_console()
        return await self.current()

    async def _nav_state(self, token: str, *, mark: bool = False, timeout_s: float = 30.0) -> Any:
        state = await self._call("nav_mark", token, mark, timeout_s=timeout_s)
        if not isinstance(state, dict):
            raise Refused("the page did not report its navigation state")
        return state["url"] if mark else state

    async def _loaded(self, token: str, before: str, *, history: bool, watch_driver: bool = False) -> None:
        """Until a new document finished loading or the URL changed within the marked document (a fragment,
        a same-document history entry). A history step that shows no sign of navigating within
        ``HISTORY_GRACE_S`` had nowhere to go (the driver does not say). A load still going at
        ``NAVIGATION_TIMEOUT_S`` is left going: the verb reports where the page is.

        ``watch_driver`` (navigating to a URL): the driver's current URL is the pending load's while one is
        pending. Most failed loads commit an error document (about:blank), which ends the wait like any load;
        a certificate refused by WebKitGTK commits nothing and leaves the marked document in place. So once
        the driver showed another URL and is back at the marked document's, with that document still there,
        the load ended without a document: the verb reports the page where it stayed."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        left = False  # the driver showed a URL other than the marked document's: a load was pending
        while loop.time() - start < NAVIGATION_TIMEOUT_S:
            driver_url = None
            if watch_driver:
                try:
                    driver_url = str(await self._client.command("GET", "/url", timeout_s=NAVIGATION_PROBE_TIMEOUT_S))
                except (Refused, EngineTimeout, NotFound) as exc:
                    log.debug("engine-c could not read the driver's URL: %s", exc)
                else:
                    left = left or driver_url != before
            try:
                state = await self._nav_state(token, timeout_s=NAVIGATION_PROBE_TIMEOUT_S)
            except (Refused, EngineTimeout, NotFound) as exc:
                log.debug("engine-c navigation probe failed (document being replaced?): %s", exc)
                state = None
            if state is not None:
                if not state.get("marked") and state.get("ready") == "complete":
                    return
                if state.get("marked") and state.get("url") != before:
                    return
                if history and state.get("marked") and loop.time() - start > HISTORY_GRACE_S:
                    return
                if left and state.get("marked") and state.get("url") == before and driver_url == before:
                    log.info("engine-c: a load ended without a document (a refused certificate?); page unchanged")
                    return
            await asyncio.sleep(NAVIGATION_POLL_S)
        log.info("engine-c navigation still loading after %g s; reporting where the page is", NAVIGATION_TIMEOUT_S)

    async def navigate(self, url: str) -> Page:
        return await self._navigation("/url", {"url": url})

    async def reload(self, hard: bool) -> Page:
        return await self._navigation("/refresh", {})

    async def stop_loading(self) -> None:
        await self._client.command("POST", "/execute/sync", {"script": "window.stop();", "args": []})

    async def history(self, direction: Literal["back", "forward"]) -> Page:
        return await self._navigation(f"/{direction}", {}, history=True)

    # -- stills and the live view -------------------------------------------------------------------------

    async def _png(self) -> bytes:
        return base64.b64decode(str(await self._client.command("GET", "/screenshot")))

    async def screenshot(self, full_page: bool, max_width: int, max_height: int) -> Still:
        if full_page:
            data = await self._full_page_png()
        else:
            data = await self._png()
        width, height = image_size(data)
        target = fit(width, height, max_width, max_height)
        if target != (width, height):
            data = await transcode_png(data, *target, to="png")
            width, height = image_size(data)
        return Still("image/png", data, width, height)

    async def _full_page_png(self) -> bytes:
        """The driver's screenshots stop at the viewport: make the window as tall as the document, capture,
        and put the window back."""
        state = await self._page_state()
        height = min(int(state["docHeight"]), MAX_FULL_PAGE_HEIGHT)
        if height <= int(state["height"]):
            return await self._png()
        rect = await self._client.command("GET", "/window/rect")
        try:
            await self._client.command(
                "POST", "/window/rect", {"width": rect["width"], "height": height + int(state["chromeHeight"])}
            )
            return await self._png()
        finally:
            await self._client.command("POST", "/window/rect", {"width": rect["width"], "height": rect["height"]})

    def frames(self, max_width: int, max_height: int) -> AsyncIterator[Frame]:
        ffmpeg_path()  # refuse at once when the host has no transcoder

        async def capture() -> tuple[bytes, int, int]:
            while True:
                try:
                    data = await self._png()
                except EngineTimeout:
                    continue  # the driver holds screenshots while a navigation is pending: keep asking
                except Unavailable as exc:
                    if exc.detail_code not in _WINDOW_GONE:
                        raise
                    await self._pages.follow()  # the current page closed: the frames go on from the next one
                    continue
                return (data, *fit(*image_size(data), max_width, max_height))

        async def encode(data: bytes, width: int, height: int) -> bytes:
            return await transcode_png(data, width, height, to="jpeg")

        return polled_frames(capture, encode=encode)

    async def set_viewport(self, width: int, height: int) -> None:
        """The driver sizes the window, not the viewport: size it by the browser's chrome around the page, and
        correct once more if the window manager-less display rounded it."""
        for _ in range(3):
            state = await self._page_state()
            if (int(state["width"]), int(state["height"])) == (width, height):
                self._viewport = (width, height)
                return
            await self._client.command(
                "POST",
                "/window/rect",
                {"width": width + int(state["chromeWidth"]), "height": height + int(state["chromeHeight"])},
            )
        state = await self._page_state()
        if (int(state["width"]), int(state["height"])) != (width, height):
            raise Unavailable(f"engine-c could not size its viewport to {width}x{height}")
        self._viewport = (width, height)

    # -- files --------------------------------------------------------------------------------------------

    async def set_input_files(self, x: int, y: int, guest_paths: Sequence[str]) -> bool:
        node = await self._call("file_input", x, y)
        element = node.get(ELEMENT_KEY) if isinstance(node, dict) else None
        if not isinstance(element, str) or not _ELEMENT_ID.match(element):
            return False
        await self._client.command("POST", f"/element/{element}/value", {"text": "\n".join(guest_paths)})
        return True

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._client.close()


def capabilities() -> dict[str, Any]:
    return {
        "webkitgtk:browserOptions": {
            "binary": MINIBROWSER,
            "args": ["--automation", "--javascript-can-access-clipboard=true", "--enable-smooth-scrolling=false"],
        },
        "pageLoadStrategy": PAGE_LOAD_STRATEGY,
        "unhandledPromptBehavior": "dismiss",
        "timeouts": {"script": int(SCRIPT_TIMEOUT_S * 1000), "pageLoad": int(NAVIGATION_TIMEOUT_S * 1000),
                     "implicit": 0},
    }  # fmt: skip


async def connect(endpoint: Endpoint, ctx: LaunchContext) -> WebKitSession:
    """A WebDriver session whose MiniBrowser shows ``ctx.home_url`` with a viewport of the boot display."""
    client = WebDriverClient(endpoint)
    try:
        wanted = capabilities()
        await client.start(wanted)
        session = WebKitSession(client, str(await client.command("GET", "/window")), wanted)
        await session.boot(ctx)
    except BaseException:
        await client.close()
        raise
    return session


RECIPE = EngineRecipe(ENGINE, relay=False, plan=plan, connect=connect)
