"""Engine B: Firefox ESR driven over WebDriver BiDi (its built-in remote agent; no geckodriver).

Firefox runs headless with its own profile; ``user.js`` keeps it quiet on a closed network (no updates,
telemetry, studies, remote settings, safe-browsing lists, captive-portal or connectivity probes, DNS over
HTTPS) and lets the page's clipboard API read without a paste prompt. A dev CA, when given, goes into the
profile's NSS database with ``certutil`` before Firefox starts.

What engine B cannot do, and what it does instead:
- hard reload: Firefox's ``browsingContext.reload`` refuses ``ignoreCache``; a hard reload is a normal one.
- real file drops: no drag of files into the page; ``set_input_files`` points a file input at the files.
- HTML drag and drop: ``drag`` moves a real pointer (mouse events, pointer-driven drags work) and the page's
  ``dragstart`` fires, but headless Firefox delivers no ``drop`` to synthesized input.
- accessibility: no platform tree over BiDi; ``extract("a11y")`` is the DOM-derived approximation, flagged.
- scaled stills: ``captureScreenshot`` has no scale; a still larger than asked is scaled on a canvas in a
  sandboxed script realm (the page's own scripts cannot reach it), never scaled up.
- live view: no screencast; stills are polled at most six times a second and unchanged ones skipped.
- clipboard images: headless Firefox's clipboard keeps only text and HTML flavours (``navigator.clipboard.write``
  of an image resolves, and the clipboard is then empty), so ``clipboard_write_image`` answers False saying so
  without writing, and ``clipboard_read_image`` finds no image.
- the last page closing: a page's ``window.close()`` in Firefox's last tab closes the window and with it the
  browser, so a blank background tab is kept in reserve (never a page the session acts on); when the session's
  last page closes, the home page is loaded there and a new reserve opened.
"""

from __future__ import annotations

import base64
import collections
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal

from hangar.errors import NotFound, Refused, Unavailable
from hangar.rigs.engines.firefox.bidi import BidiClient, local_value, python_value
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

ENGINE = "engine-b"
PROFILE = ".firefox"
NAVIGATION_TIMEOUT_S = 60.0  # past this a navigation answers where the page is, still loading
JPEG_QUALITY = 0.8
MAX_FULL_PAGE_HEIGHT = 16_384  # CSS pixels of a full-page still; longer documents are cut
SUBSCRIBED = (
    "log.entryAdded",
    "network.responseCompleted",
    "browsingContext.contextCreated",
    "browsingContext.contextDestroyed",
)
SANDBOX = "hangar"  # the script realm for canvas work, out of the page's reach
TITLE_TIMEOUT_S = 5.0  # reading a page's title for the page list: a page busy past this shows none
NO_CLIPBOARD_IMAGES = (
    "engine-b runs Firefox headless, whose clipboard holds text and HTML only: an image written to it is dropped"
)

# Preferences for a browser on a closed network, driven by automation. Values are JSON literals in user.js.
PREFS: dict[str, bool | int | str] = {
    # first run, default-browser and session-restore prompts
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "startup.homepage_welcome_url": "about:blank",
    "startup.homepage_welcome_url.additional": "",
    "browser.aboutwelcome.enabled": False,
    "trailhead.firstrun.didSeeAboutWelcome": True,
    "datareporting.policy.firstRunURL": "",
    "browser.sessionstore.resume_from_crash": False,
    "toolkit.startup.max_resumed_crashes": -1,
    "browser.tabs.warnOnClose": False,
    "browser.warnOnQuit": False,
    "signon.rememberSignons": False,
    # updates, telemetry, studies, remote settings
    "app.update.disabledForTesting": True,
    "app.update.auto": False,
    "app.normandy.enabled": False,
    "app.shield.optoutstudies.enabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "datareporting.healthreport.uploadEnabled": False,
    "toolkit.telemetry.enabled": False,
    "toolkit.telemetry.unified": False,
    "toolkit.telemetry.archive.enabled": False,
    "toolkit.telemetry.server": "",
    "services.settings.server": "data:,#remote-settings-disabled/v1",
    "extensions.update.enabled": False,
    "extensions.getAddons.cache.enabled": False,
    "extensions.systemAddon.update.enabled": False,
    "extensions.blocklist.enabled": False,
    "media.gmp-manager.updateEnabled": False,
    "browser.search.update": False,
    "browser.region.update.enabled": False,
    "browser.region.network.url": "",
    "browser.translations.enable": False,
    "browser.ml.enable": False,
    "browser.uitour.enabled": False,
    "browser.discovery.enabled": False,
    "browser.newtabpage.enabled": False,
    "browser.newtabpage.activity-stream.feeds.system.topstories": False,
    "browser.topsites.contile.enabled": False,
    # background network traffic
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "browser.safebrowsing.downloads.enabled": False,
    "browser.safebrowsing.blockedURIs.enabled": False,
    "browser.safebrowsing.provider.google4.updateURL": "",
    "browser.safebrowsing.provider.mozilla.updateURL": "",
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "network.trr.mode": 5,
    "network.dns.disablePrefetch": True,
    "network.prefetch-next": False,
    "network.predictor.enabled": False,
    "network.http.speculative-parallel-limit": 0,
    "security.OCSP.enabled": 0,
    "security.remote_settings.crlite_filters.enabled": False,
    "security.remote_settings.intermediates.enabled": False,
    "geo.provider.network.url": "",
    # the page's clipboard API: read without the paste prompt (secure contexts only, as everywhere)
    "dom.events.asyncClipboard.readText": True,
    "dom.events.asyncClipboard.clipboardItem": True,
    "dom.events.testing.asyncClipboard": True,
}


# Release and ESR builds ignore ``services.settings.server`` unless this is set (Mozilla bug 1598562): without it
# Firefox asks firefox.settings.services.mozilla.com for its remote settings whatever the profile says, which an
# idle rig's gate log showed as refusals every few seconds.
FIREFOX_ENV = {"MOZ_HEADLESS": "1", "MOZ_CRASHREPORTER_DISABLE": "1", "MOZ_REMOTE_SETTINGS_DEVTOOLS": "1"}


def user_js() -> bytes:
    lines = [f"user_pref({_js_literal(name)}, {_js_literal(value)});" for name, value in PREFS.items()]
    return ("\n".join(lines) + "\n").encode()


def _js_literal(value: bool | int | str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def plan(ctx: LaunchContext) -> LaunchPlan:
    profile = f"{ctx.home}/{PROFILE}"
    setup: tuple[EngineProcess, ...] = ()
    if ctx.ca_file:
        # ``certutil -A`` creates the profile's database itself (without a password, as Firefox's own would be):
        # one process on every boot's path instead of two.
        database = f"sql:{profile}"
        setup = (
            EngineProcess(
                "certutil-trust", ("certutil", "-A", "-d", database, "-t", "C,,", "-n", "hangar-dev", "-i", ctx.ca_file)
            ),
        )
    firefox = EngineProcess(
        "firefox",
        ("firefox-esr", "--headless", "--no-remote", "--profile", profile,
         "--remote-debugging-port", str(ctx.port), ctx.home_url),
        FIREFOX_ENV,
    )  # fmt: skip
    return LaunchPlan(files={f"{PROFILE}/user.js": user_js()}, setup=setup, processes=(firefox,))


class ConsoleRing:
    """The latest console entries within ``CONSOLE_ENTRIES`` and ``CONSOLE_CHARS``, counting what fell out."""

    def __init__(self) -> None:
        self.entries: collections.deque[tuple[str, str]] = collections.deque()
        self.chars = 0
        self.dropped = 0

    def add(self, level: str, text: str) -> None:
        if len(text) > CONSOLE_ENTRY_CHARS:
            text = text[: CONSOLE_ENTRY_CHARS - 1] + "\u2026"
        self.entries.append((level, text))
        self.chars += len(text)
        while len(self.entries) > CONSOLE_ENTRIES or self.chars > CONSOLE_CHARS:
            self.chars -= len(self.entries.popleft()[1])
            self.dropped += 1


class FirefoxSession(W3CSession):
    engine = ENGINE
    hard_reload = False  # browsingContext.reload refuses ignoreCache
    real_drop = False
    clipboard_images_absent = NO_CLIPBOARD_IMAGES

    def __init__(self, client: BidiClient, context: str) -> None:
        super().__init__(context)
        self._client = client
        self._context = context  # the current page's top-level context
        self._logs: dict[str, ConsoleRing] = {}  # each top-level context's console, from its start
        self._parents: dict[str, str] = {}  # a frame's context -> its parent's, to file its console entries
        self._reserve: str | None = None  # a blank background tab, so a page's window.close() never closes the last
        self._statuses: collections.OrderedDict[str, int] = collections.OrderedDict()
        self._closed = False
        client.on("log.entryAdded", self._on_log)
        client.on("network.responseCompleted", self._on_response)
        client.on("browsingContext.contextCreated", self._on_context_created)
        client.on("browsingContext.contextDestroyed", self._on_context_destroyed)

    # -- events -------------------------------------------------------------------------------------------

    def _on_log(self, params: dict[str, Any]) -> None:
        if params.get("type") == "console":
            level = str(params.get("method") or params.get("level") or "log")
        else:
            level = "exception"
        source = params.get("source")
        context = str(source.get("context") or self._context) if isinstance(source, dict) else self._context
        for _ in range(32):  # a frame's entries belong to its page's console (nesting is bounded by the browser)
            if context not in self._parents:
                break
            context = self._parents[context]
        self._logs.setdefault(context, ConsoleRing()).add(level, str(params.get("text") or ""))

    def _on_context_created(self, params: dict[str, Any]) -> None:
        parent = params.get("parent")
        if isinstance(parent, str):
            self._parents[str(params.get("context"))] = parent
        opener = params.get("originalOpener")
        if params.get("parent") is None and isinstance(opener, str) and self._pages.knows(opener):
            self._pages.opened(str(params.get("context")))
            self._pages.soon()

    def _on_context_destroyed(self, params: dict[str, Any]) -> None:
        context = str(params.get("context"))
        self._logs.pop(context, None)
        self._parents.pop(context, None)
        if context == self._reserve:
            self._reserve = None
        if params.get("parent") is None:
            self._pages.closed(context)
            if self._pages.pending:
                self._pages.soon()

    def _on_response(self, params: dict[str, Any]) -> None:
        navigation, response = params.get("navigation"), params.get("response")
        if not isinstance(navigation, str) or not isinstance(response, dict):
            return
        status = response.get("status")
        if isinstance(status, int):
            self._statuses[navigation] = status  # after redirects, the last response of the navigation wins
            self._statuses.move_to_end(navigation)
            while len(self._statuses) > 64:
                self._statuses.popitem(last=False)

    # -- primitives ---------------------------------------------------------------------------------------

    async def _call(self, name: str, *args: Json, timeout_s: float = 30.0) -> Any:
        activate = name.startswith("clipboard")  # the clipboard API wants a user activation
        return await self._function(script(name), list(args), timeout_s=timeout_s, activate=activate)

    async def _function(
        self, declaration: str, args: list[Json], *, timeout_s: float = 30.0, activate: bool = False,
        sandbox: bool = False,
    ) -> Any:  # fmt: skip
        target: dict[str, str] = {"context": self._context}
        if sandbox:
            target["sandbox"] = SANDBOX
        result = await self._client.call(
            "script.callFunction",
            {"functionDeclaration": declaration, "arguments": [local_value(a) for a in args], "target": target,
             "awaitPromise": True, "userActivation": activate, "resultOwnership": "none"},
            timeout_s,
        )  # fmt: skip
        if result.get("type") == "exception":
            details = result.get("exceptionDetails")
            text = str(details.get("text", "")) if isinstance(details, dict) else ""
            raise Refused(f"the page's script failed: {' '.join(text.split())[:200]}")
        remote = result.get("result")
        return python_value(remote) if isinstance(remote, dict) else None

    async def _perform(self, sources: list[w3c_actions.Source]) -> None:
        await self._client.call("input.performActions", {"context": self._context, "actions": sources})

    async def _console(self) -> Extracted:
        ring = self._logs.get(self._context) or ConsoleRing()
        return console_extract(list(ring.entries), ring.dropped)

    # -- following pages ----------------------------------------------------------------------------------

    async def _discover_pages(self) -> None:
        # One round trip: the context events sent before its answer (the last verb's) have been handled.
        await self._client.call("browsingContext.getTree", {"maxDepth": 0})

    async def _show_page(self, page: str) -> None:
        self._context = page
        await self._client.call("browsingContext.activate", {"context": page})
        if self._viewport != (0, 0):
            await self.set_viewport(*self._viewport)

    async def reserve(self) -> None:
        """Keep a blank tab in the background. A page calling ``window.close()`` in the last tab closes Firefox's
        window, and with it the browser; with this tab there, the window stays, and the tab takes the home page
        when the session's last page closed."""
        if self._reserve is None:
            created = await self._client.call("browsingContext.create", {"type": "tab", "background": True})
            self._reserve = str(created["context"])

    async def _open_home(self) -> str:
        context, self._reserve = self._reserve, None
        if context is None:
            context = str((await self._client.call("browsingContext.create", {"type": "tab"}))["context"])
        await self._client.call(
            "browsingContext.navigate", {"context": context, "url": self._home_url, "wait": "complete"},
            NAVIGATION_TIMEOUT_S,
        )  # fmt: skip
        await self.reserve()
        return context

    def _engine_gone(self) -> bool:
        return self._client.closed

    async def _describe_pages(self, pages: list[str], current: str | None) -> dict[str, tuple[str, str]]:
        # Every context's URL from the tree, and each page's title read in a sandboxed realm of that page (the
        # page's own scripts cannot answer for it), without moving to it.
        tree = await self._client.call("browsingContext.getTree", {"maxDepth": 0})
        urls = {str(c.get("context")): str(c.get("url", "")) for c in tree.get("contexts", [])}
        found: dict[str, tuple[str, str]] = {}
        for page in pages:
            if page in urls:
                found[page] = (urls[page], await self._title_of(page))
        return found

    async def _title_of(self, context: str) -> str:
        with contextlib.suppress(Unavailable, Refused, NotFound):  # EngineTimeout is an Unavailable
            result = await self._client.call(
                "script.callFunction",
                {"functionDeclaration": "() => document.title", "arguments": [],
                 "target": {"context": context, "sandbox": SANDBOX}, "awaitPromise": False,
                 "resultOwnership": "none"},
                TITLE_TIMEOUT_S,
            )  # fmt: skip
            remote = result.get("result")
            if result.get("type") == "success" and isinstance(remote, dict):
                return str(python_value(remote) or "")
        return ""

    # -- navigation ---------------------------------------------------------------------------------------

    async def _navigation(self, method: str, params: dict[str, Any]) -> Page:
        try:
            result = await self._client.call(method, {"context": self._context, **params}, NAVIGATION_TIMEOUT_S)
        except EngineTimeout:
            return await self.current()  # still loading: say where the page is now
        except Unavailable as exc:
            if exc.detail_code != "unknown_error" or self._client.closed:
                raise
            return await self.current()  # a network error: Firefox shows its error page there
        page = await self.current()
        navigation = result.get("navigation")
        status = self._statuses.get(navigation) if isinstance(navigation, str) else None
        return Page(page.url, page.title, status)

    async def navigate(self, url: str) -> Page:
        return await self._navigation("browsingContext.navigate", {"url": url, "wait": "complete"})

    async def reload(self, hard: bool) -> Page:
        # Never ignoreCache: Firefox answers "unsupported operation"; a hard reload is a normal one here.
        return await self._navigation("browsingContext.reload", {"wait": "complete"})

    async def stop_loading(self) -> None:
        await self._function("() => { window.stop(); }", [])

    async def history(self, direction: Literal["back", "forward"]) -> Page:
        try:
            await self._client.call(
                "browsingContext.traverseHistory",
                {"context": self._context, "delta": -1 if direction == "back" else 1},
                NAVIGATION_TIMEOUT_S,
            )
        except NotFound:
            raise NotFound(f"there is no page to go {direction} to") from None
        await self._settle()
        return await self.current()

    # -- stills and the live view -------------------------------------------------------------------------

    async def _capture(self, params: dict[str, Any], max_width: int, max_height: int) -> tuple[bytes, int, int]:
        result = await self._client.call(
            "browsingContext.captureScreenshot",
            {"context": self._context, "format": {"type": "image/jpeg", "quality": JPEG_QUALITY}, **params},
        )
        data = base64.b64decode(str(result.get("data", "")))
        width, height = image_size(data)
        target = fit(width, height, max_width, max_height)
        if target == (width, height):
            return data, width, height
        scaled = await self._function(
            script("scale_image"),
            [base64.b64encode(data).decode(), "image/jpeg", target[0], target[1], "image/jpeg", JPEG_QUALITY],
            sandbox=True,
        )
        data = base64.b64decode(str(scaled))
        return (data, *image_size(data))

    async def screenshot(self, full_page: bool, max_width: int, max_height: int) -> Still:
        params: dict[str, Any] = {"origin": "viewport"}
        if full_page:
            state = await self._page_state()
            width, height = int(state["docWidth"]), min(int(state["docHeight"]), MAX_FULL_PAGE_HEIGHT)
            params = {"origin": "document", "clip": {"type": "box", "x": 0, "y": 0, "width": width, "height": height}}
        data, width, height = await self._capture(params, max_width, max_height)
        return Still("image/jpeg", data, width, height)

    def frames(self, max_width: int, max_height: int) -> AsyncIterator[Frame]:
        return polled_frames(lambda: self._capture({"origin": "viewport"}, max_width, max_height))

    async def set_viewport(self, width: int, height: int) -> None:
        await self._client.call(
            "browsingContext.setViewport", {"context": self._context, "viewport": {"width": width, "height": height}}
        )
        self._viewport = (width, height)

    # -- files --------------------------------------------------------------------------------------------

    async def set_input_files(self, x: int, y: int, guest_paths: Sequence[str]) -> bool:
        node = await self._call("file_input", x, y)
        if not isinstance(node, dict) or not isinstance(node.get("sharedId"), str):
            return False
        await self._client.call(
            "input.setFiles",
            {"context": self._context, "element": {"sharedId": node["sharedId"]}, "files": list(guest_paths)},
        )
        return True

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._pages.aclose()
        if not self._client.closed:
            with contextlib.suppress(Unavailable):  # the browser is going away anyway
                await self._client.call("session.end", {}, timeout_s=5)
        await self._client.aclose()


async def connect(endpoint: Endpoint, ctx: LaunchContext) -> FirefoxSession:
    """A BiDi session on a fresh tab (the first tab may hold a page that refuses some navigations), showing
    ``ctx.home_url`` at the boot display's size, with console and document statuses recorded from the start."""
    client = await BidiClient.connect(endpoint)
    try:
        await client.call(
            "session.new",
            {"capabilities": {"alwaysMatch": {"acceptInsecureCerts": False,
                                              "unhandledPromptBehavior": {"default": "dismiss"}}}},
        )  # fmt: skip
        created = await client.call("browsingContext.create", {"type": "tab"})
        context = str(created["context"])
        tree = await client.call("browsingContext.getTree", {"maxDepth": 0})
        for other in tree.get("contexts", []):
            if isinstance(other, dict) and other.get("context") != context:
                await client.call("browsingContext.close", {"context": other["context"]})
        session = FirefoxSession(client, context)
        # Every context's events, so a page opened later has its console and statuses from its start.
        await client.call("session.subscribe", {"events": [*SUBSCRIBED]})
        await session.reserve()
        await client.call("browsingContext.activate", {"context": context})
        await session.boot(ctx)
    except BaseException:
        await client.aclose()
        raise
    return session


RECIPE = EngineRecipe(ENGINE, relay=True, plan=plan, connect=connect)
