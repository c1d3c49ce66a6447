"""Rigs in the space screen end to end: Debian's Chromium, driven by Playwright, against a real server (real build
of ``web/``) whose rigs run in real enclosures, and pages a test server serves through the rigs' egress gates.

A Chromium rig is opened from the space by the browser's name and driven through its address bar (typing an
address, back, forward, reload) and its page list (a page that opens a second one; switching back). An address the
rig may not reach shows a notice naming the host and the rule, whose link takes an admin to the rig's grant form; a
member sees the notice without the link, and without control cannot use the address bar. The conversation and the
rig sit side by side with the separator where the person left it, across a reload; on a phone they stack. A
terminal shows its recent output after its socket was cut and reconnected, and nothing of another rig's terminal;
a host its shell could not reach is told in its view too. axe finds no serious or critical violation on any of
these views, light and dark, desktop and phone; no console errors."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hangar.rigs.lanes.fence import unfence
from tests.integration.rigs_enclosure_env import ready_pack
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.support.chromium import CHROMIUM
from tests.support.pages import page_server
from tests.support.webclient import (
    DESKTOP,
    PHONE,
    accessible_everywhere,
    chromium,
    open_signed_in,
    picture_point,
    shot,
)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

SITE = "pages.space-rigs.example"
OPENER = f"http://{SITE}/popup_opener.html"
BASIC = f"http://{SITE}/basic.html"
POPUP = f"http://{SITE}/popup_page.html?via=script"
BLOCKED = "http://still-blocked.example/"
BOOT_MS = 180_000  # a bound against hangs only: a rig's boot on a busy machine
XTERM = ".xterm"  # xterm.js's own markup, as the space tests leave it out

# Every WebSocket the page opens, so a test can cut one as a dropped connection would.
TRACK_SOCKETS = """(() => {
  const Native = window.WebSocket;
  const open = [];
  window.__sockets = open;
  window.WebSocket = class extends Native {
    constructor(...args) { super(...args); open.push(this); }
  };
})();"""


def space_url(env: RigsEnv) -> str:
    return f"{env.srv.url}/workspaces/{env.ws}/spaces/{env.space}"


async def use(env: RigsEnv, rig: str, **action: Any) -> dict[str, Any]:
    reply = await env.call("browser_use", rigId=rig, action=action)
    assert isinstance(reply, dict)
    return reply


async def current_page(env: RigsEnv, rig: str) -> str:
    listed = (await use(env, rig, action="pages"))["pages"]
    return next(unfence(p["url"]) for p in listed if p["current"])


async def at(page: Any, x: int, y: int) -> tuple[float, float]:
    """Where the page's CSS point (x, y) of a 1280x800 viewport is on the canvas (fitted, centred)."""
    return await picture_point(page, "canvas.live-canvas", (1280, 800), x, y)


@contextlib.asynccontextmanager
async def manual_size(page: Any) -> AsyncIterator[None]:
    """The page at the manual's picture size, scrolled to its top, while a shot is taken."""
    await page.set_viewport_size({"width": 1280, "height": 800})
    await page.evaluate("window.scrollTo(0, 0)")
    try:
        yield
    finally:
        await page.set_viewport_size(DESKTOP)


async def test_a_chromium_rig_opened_by_name_is_driven_through_its_address_bar(tmp_path: Path, dist: Path) -> None:
    async with (
        page_server() as pages,
        rigs_server(tmp_path, web_dist=dist, overrides={f"{SITE}:80": ("127.0.0.1", pages.port)}) as env,
        chromium() as browser,
    ):
        await ready_pack("engine-a")  # the waits below are for the boot alone
        page, console = await open_signed_in(browser, space_url(env), env.srv.owner_token, viewport=DESKTOP)
        await page.get_by_role("heading", name="rig tests").wait_for()
        engines = page.get_by_label("Browser engine")
        await engines.wait_for()  # the open buttons show once the space's rigs are listed
        assert await engines.locator("option").all_inner_texts() == ["Chromium", "Firefox", "WebKit"]
        await engines.select_option(label="Chromium")
        await page.get_by_role("button", name="Open a browser").click()
        tab = page.get_by_role("tab", name="Live view (Chromium)")
        await tab.wait_for(timeout=BOOT_MS)
        assert await tab.get_attribute("aria-selected") == "true"
        await (
            page.get_by_role("status")
            .filter(has_text="Live view connected (Chromium): watching")
            .wait_for(timeout=BOOT_MS)
        )
        rig = page.url.rsplit("/", 1)[1]
        assert (await env.status(rig))["engine"] == "engine-a"  # the wire keeps the engine's value
        address = page.get_by_role("textbox", name="Address")
        await page.wait_for_function("() => document.querySelector('.address-field input').value.startsWith('file:')")
        assert await address.get_attribute("readonly") is not None  # watching: the bar shows, it does not drive
        assert await page.get_by_role("button", name="Back", exact=True).is_disabled()
        await accessible_everywhere(page)

        # In control, an address the rig may not reach: the page cannot load, and the view says why.
        await page.get_by_role("button", name="Take control").click()
        await page.get_by_role("status").filter(has_text="you drive the page").wait_for()
        await address.fill(OPENER)
        await address.press("Enter")
        notice = page.get_by_role("region", name="Network refused")
        await notice.get_by_text(f"This rig could not reach {SITE}: it is not on this rig's allowlist").wait_for()
        assert await notice.get_by_text("allowlist", exact=True).count() == 1  # the rule, named
        await accessible_everywhere(page)
        # The admin's link leads to the rig's grant form with the host filled in.
        await notice.get_by_role("link", name=f"Let this rig reach {SITE}").click()
        hosts = page.get_by_label("Host names (exact, or *.suffix; separate several with spaces)")
        assert await hosts.input_value() == SITE
        assert "?grant=" in page.url
        await page.get_by_role("button", name="Let this rig reach them").click()
        await page.get_by_role("status").filter(has_text=f"This rig may now reach {SITE}").wait_for()
        await notice.wait_for(state="detached")  # the notice is done with once the host is granted

        # Now the address loads; the bar follows the page through back, forward and reload.
        await address.fill(OPENER)
        await address.press("Enter")
        await page.wait_for_function(f"() => document.querySelector('.address-field input').value === {OPENER!r}")
        assert await current_page(env, rig) == OPENER
        await address.fill(BASIC)
        await page.get_by_role("button", name="Go").click()
        await page.wait_for_function(f"() => document.querySelector('.address-field input').value === {BASIC!r}")
        await page.get_by_role("button", name="Back", exact=True).click()
        await page.wait_for_function(f"() => document.querySelector('.address-field input').value === {OPENER!r}")
        assert await current_page(env, rig) == OPENER
        await page.get_by_role("button", name="Forward").click()
        await page.wait_for_function(f"() => document.querySelector('.address-field input').value === {BASIC!r}")
        await page.get_by_role("button", name="Reload").click()
        await page.get_by_role("status").filter(has_text="Reloading…").wait_for(state="detached")
        assert await current_page(env, rig) == BASIC
        await page.get_by_role("button", name="Back", exact=True).click()
        await page.wait_for_function(f"() => document.querySelector('.address-field input').value === {OPENER!r}")

        # A page opening a second one: both are listed, the new one shown; switching back moves the rig.
        x, y = await at(page, 160, 120)  # popup_opener.html's "open by script" button
        await page.mouse.click(x, y)
        listed = page.get_by_role("list", name="Pages of this browser")
        await listed.wait_for()
        await page.get_by_role("heading", name="Pages (2)").wait_for()
        await page.wait_for_function(f"() => document.querySelector('.address-field input').value === {POPUP!r}")
        await listed.get_by_role("button", name="Switch to Popup opener").click()
        await page.wait_for_function(f"() => document.querySelector('.address-field input').value === {OPENER!r}")
        assert await current_page(env, rig) == OPENER
        assert await listed.get_by_role("button", name="Switch to Popup page").count() == 1
        await accessible_everywhere(page)
        async with manual_size(page):
            await shot(page, "rigs-browser-address-bar")

        # Side by side: the conversation stays beside the rig, and the separator stays where it was put.
        await page.get_by_role("button", name="Side by side").click()
        separator = page.get_by_role("separator", name="Conversation and rig: drag or use the arrow keys to resize")
        await separator.wait_for()
        await page.get_by_role("textbox", name="Message").wait_for()
        await separator.focus()
        await separator.press("ArrowRight")
        await separator.press("ArrowRight")
        assert await separator.get_attribute("aria-valuenow") == "60"
        composer, canvas = page.get_by_role("textbox", name="Message"), page.locator("canvas.live-canvas")
        left, right = await composer.bounding_box(), await canvas.bounding_box()
        assert left["x"] + left["width"] <= right["x"]  # side by side
        await accessible_everywhere(page)
        async with manual_size(page):
            await shot(page, "rigs-side-by-side")
        await page.reload()
        await separator.wait_for(timeout=60_000)
        assert await separator.get_attribute("aria-valuenow") == "60"
        assert await page.get_by_role("button", name="Side by side").get_attribute("aria-pressed") == "true"
        # On a phone they stack: the conversation above the rig, no separator.
        await page.set_viewport_size(PHONE)
        await canvas.wait_for()
        assert not await separator.is_visible()
        top, below = await composer.bounding_box(), await canvas.bounding_box()
        assert top["y"] + top["height"] <= below["y"]
        await page.set_viewport_size(DESKTOP)

        # A member without control sees where the page is but cannot move it, and is shown no grant link.
        await address.fill(BLOCKED)
        await address.press("Enter")
        await page.get_by_role("link", name="Let this rig reach still-blocked.example").wait_for()
        shown = await address.input_value()  # the browser's error page, under the address asked for
        await env.call("rig.releaseControl", rigId=rig)
        member = await env.srv.new_user_token(env.ws, "member", name="colleague")
        theirs, their_console = await open_signed_in(
            browser, f"{env.srv.url}/workspaces/{env.ws}/rigs/{rig}", member, viewport=DESKTOP
        )
        their_address = theirs.get_by_role("textbox", name="Address")
        await theirs.wait_for_function(
            f"() => document.querySelector('.address-field input')?.value === {shown!r}", timeout=60_000
        )
        assert await their_address.get_attribute("readonly") is not None
        assert await theirs.get_by_role("button", name="Reload").is_disabled()
        their_notice = theirs.get_by_role("region", name="Network refused")
        await their_notice.get_by_text("This rig could not reach still-blocked.example").wait_for()
        await their_notice.get_by_text("A workspace admin can let it reach this host.").wait_for()
        assert await their_notice.get_by_role("link").count() == 0
        assert await theirs.get_by_label("Host names (exact, or *.suffix; separate several with spaces)").count() == 0
        await accessible_everywhere(theirs)
        # Through every resize, reload and second viewer, the first view kept its pictures coming.
        assert await page.get_by_role("status").filter(has_text="Live view connected (Chromium)").count() == 1
        assert await page.locator(".live-view .notice").count() == 0
        assert console.errors == [], console.errors
        assert their_console.errors == [], their_console.errors


CUT_TERMINAL = "window.__sockets.filter((s) => s.url.includes('/rig/terminal/')).forEach((s) => s.close())"
SCREEN_LINES = "() => [...document.querySelectorAll('.xterm-rows > div')].map((d) => d.textContent.trim())"


async def screen_has(page: Any, text: str) -> None:
    await page.wait_for_function(f"() => ({SCREEN_LINES})().some((t) => t.includes({text!r}))", timeout=30_000)


async def screen_lacks(page: Any, text: str) -> bool:
    return not await page.evaluate(f"() => ({SCREEN_LINES})().some((t) => t.includes({text!r}))")


@pytest.mark.packs("terminal")
async def test_a_terminal_shows_its_recent_output_after_reconnecting(tmp_path: Path, dist: Path) -> None:
    async with rigs_server(tmp_path, web_dist=dist) as env, chromium() as browser:
        page, console = await open_signed_in(browser, space_url(env), env.srv.owner_token, viewport=DESKTOP)
        await page.add_init_script(TRACK_SOCKETS)
        await page.reload()
        await page.get_by_role("heading", name="rig tests").wait_for()
        await page.get_by_role("button", name="Open a terminal").click()
        await page.get_by_role("status").filter(has_text="Terminal connected").wait_for(timeout=BOOT_MS)
        rig = page.url.rsplit("/", 1)[1]
        await page.locator(".xterm-helper-textarea").focus()
        await page.keyboard.type("export KEPT_MARK=same-shell; echo before-$((6*7))")
        await page.keyboard.press("Enter")
        await screen_has(page, "before-42")

        # The socket drops (as a network cut would): the terminal says so; reconnecting shows what it printed.
        await page.evaluate(CUT_TERMINAL)
        await page.get_by_role("status").filter(has_text="Terminal closed").wait_for()
        await page.get_by_role("button", name="Reconnect").click()
        await page.get_by_role("status").filter(has_text="Terminal connected").wait_for()
        await screen_has(page, "before-42")
        await page.locator(".xterm-helper-textarea").focus()
        await page.keyboard.type("echo mark-$KEPT_MARK")
        await page.keyboard.press("Enter")
        await screen_has(page, "mark-same-shell")

        # A host the shell could not reach is told in the rig's view, with the admin's link.
        await page.keyboard.type("curl -sS -m 5 http://not-granted.example/")
        await page.keyboard.press("Enter")
        notice = page.get_by_role("region", name="Network refused")
        await notice.get_by_text("This rig could not reach not-granted.example").wait_for()
        await notice.get_by_role("link", name="Let this rig reach not-granted.example").wait_for()
        await accessible_everywhere(page, exclude=(XTERM,))
        async with manual_size(page):
            await shot(page, "rigs-egress-notice")

        # Another space's terminal shows nothing of this one.
        other = await env.new_space("elsewhere")
        await page.goto(f"{env.srv.url}/workspaces/{env.ws}/spaces/{other}")
        await page.get_by_role("button", name="Open a terminal").click()
        await page.get_by_role("status").filter(has_text="Terminal connected").wait_for(timeout=BOOT_MS)
        assert page.url.rsplit("/", 1)[1] != rig
        await page.locator(".xterm-helper-textarea").focus()
        await page.keyboard.type("echo other-$((2+3))")
        await page.keyboard.press("Enter")
        await screen_has(page, "other-5")
        assert await screen_lacks(page, "before-42") and await screen_lacks(page, "mark-same-shell")
        assert await page.get_by_role("region", name="Network refused").count() == 0
        assert console.errors == [], console.errors
