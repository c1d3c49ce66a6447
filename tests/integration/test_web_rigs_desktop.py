"""A computer rig's desktop tab end to end: Debian's Chromium, driven by Playwright, shows the space page of a real
server (real build of ``web/``) whose desktop runs in a real enclosure (Xvfb and Openbox). The tab draws the desktop
and names its display size; without control a click reaches nothing and the server's read-only word is shown; with
control, clicks and keys reach the desktop where and as they were given (read back from ``xev`` in the guest), the
display size can be changed, text pasted through the clipboard panel is on the desktop's clipboard (read back with
``xclip``), a file dropped onto the view lands in ``~/Drops``, and a drag out of the desktop shows what it carried
with a way to save the file (and nothing of it before the person consents to copying out of rigs). axe finds no
serious or critical violation, light and dark, desktop and phone width; no console errors."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.integration.desktop_env import EVENT_BOUND_S, Recorder, drag_source, guest, pointer_state
from tests.integration.rigs_enclosure_env import ready_pack
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.support.chromium import CHROMIUM
from tests.support.webclient import (
    DESKTOP,
    accessible_everywhere,
    chromium,
    open_signed_in,
    picture_point,
    shot,
)

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)"),
    pytest.mark.packs("terminal", "desktop"),
]

BOOT_MS = 180_000  # a bound against hangs only: a desktop's boot on a busy machine
CANVAS = "canvas.live-canvas"


async def at(page: Any, x: int, y: int, display: tuple[int, int] = (1280, 800)) -> tuple[float, float]:
    """Where the guest pixel (x, y) of the display is on the canvas."""
    return await picture_point(page, CANVAS, display, x, y)


def near(got: tuple[int, int], want: tuple[int, int]) -> bool:
    """A point on the picture maps to a guest pixel up to rounding (the canvas is scaled to fit)."""
    return abs(got[0] - want[0]) <= 2 and abs(got[1] - want[1]) <= 2


async def drag_out(env: RigsEnv, rig: str, page: Any, payload: str, shown: Any) -> None:
    """Press on the picture, let a program in the guest take the drag selection with ``payload``, drag and let
    go; the program ends once ``shown`` (a locator of what the tab shows for the drag) is visible, so the server's
    reads of the selection, slow on a loaded machine, find it held."""
    sx, sy = await at(page, 100, 600)
    await page.mouse.move(sx, sy)
    await page.mouse.down()
    # The server takes its snapshot of the drag selection right after it applies the press, and a payload the
    # same as that snapshot is not a drag out: the source starts once the desktop holds the button, and a moment
    # more.
    async with asyncio.timeout(EVENT_BOUND_S):
        while "button1" not in await pointer_state(env, rig):
            await asyncio.sleep(0.1)
    await asyncio.sleep(1)
    source = await drag_source(env, rig, payload)
    try:
        for step in range(1, 4):
            await page.mouse.move(sx + step * 40, sy)
            await asyncio.sleep(0.3)  # the server reads the drag selection at most every 0.25 s of moving
        await page.mouse.up()
        await shown.wait_for()
    finally:
        source.cancel()
        await asyncio.gather(source, return_exceptions=True)


async def test_the_desktop_tab_shows_the_desktop_and_drives_it_in_control(tmp_path: Path, dist: Path) -> None:
    async with rigs_server(tmp_path, web_dist=dist) as env, chromium() as browser:
        await ready_pack("desktop")
        rig = await env.ready(await env.call("rig.open", space_id=env.space, surface="computer"))
        rec = Recorder(env, rig)
        await rec.start()
        try:
            await drive_the_desktop(env, rig, rec, browser)
        finally:
            await rec.stop()


async def drive_the_desktop(env: RigsEnv, rig: str, rec: Recorder, browser: Any) -> None:
    page, console = await open_signed_in(
        browser, f"{env.srv.url}/workspaces/{env.ws}/rigs/{rig}", env.srv.owner_token, viewport=DESKTOP
    )
    tab = page.get_by_role("tab", name="Desktop")
    await tab.wait_for(timeout=BOOT_MS)
    assert await tab.get_attribute("aria-selected") == "true"
    await page.get_by_role("status").filter(has_text="Desktop connected: watching").wait_for()
    await page.wait_for_function(f"() => Number(document.querySelector('{CANVAS}')?.dataset.seq) > 0")
    await page.get_by_text("Display 1280 × 800").wait_for()
    canvas = page.get_by_role("img", name="The rig's desktop, live")
    await canvas.wait_for()
    await accessible_everywhere(page)

    # Without control a click reaches nothing, and the view shows what the server says about it.
    await page.get_by_text("Take control (above) to use the mouse and keyboard on the desktop.").wait_for()
    x, y = await at(page, 100, 100)
    await page.mouse.click(x, y)
    await page.get_by_text("take control to send input; until then the live view only shows the screen").wait_for()

    # In control, a click lands on the guest pixel it was given (the ignored one never arrived), and keys type.
    await page.get_by_role("button", name="Take control").click()
    await page.get_by_role("status").filter(has_text="Desktop connected: you drive the desktop").wait_for()
    driven = page.get_by_role("img", name="The rig's desktop: you have control (keys and mouse go to the desktop)")
    x, y = await at(page, 300, 200)  # the hint above the view went away: the view moved
    await page.mouse.click(x, y)
    presses = await rec.until(1, "ButtonPress")
    assert presses[0].button == 1 and near(presses[0].root, (300, 200)), presses[0].text
    await driven.press_sequentially("hi")
    await driven.press("Enter")
    keys = await rec.until(3, "KeyPress")
    assert "".join(e.chars for e in keys[:2]) == "hi" and keys[2].key == "Return"
    await accessible_everywhere(page)
    await shot(page, "rigs-desktop")

    # The display size: chosen from the list, the mode changes in the guest and the view says so.
    await page.get_by_label("Display size", exact=True).select_option(label="1024 × 768")
    await page.get_by_text("Display 1024 × 768").wait_for()
    assert "current 1024 x 768" in await guest(env, rig, "xrandr --current")
    await env.call("computer_use", rigId=rig, action={"action": "set_display", "width": 1280, "height": 800})
    await page.get_by_text("Display 1280 × 800").wait_for()

    # Text pasted through the clipboard panel is on the desktop's clipboard.
    await page.get_by_label("Paste into the rig (type or paste text, or paste a PNG or JPEG image)").fill("from me")
    await page.get_by_role("button", name="Paste into the rig").click()
    async with asyncio.timeout(30):
        while await guest(env, rig, "xclip -o -selection clipboard || true") != "from me":
            await asyncio.sleep(0.2)

    # A file dropped onto the view lands in ~/Drops and is on the desktop's clipboard.
    transfer = await page.evaluate_handle(
        """() => { const t = new DataTransfer();
                   t.items.add(new File(['dropped on the desktop'], 'note.txt', {type: 'text/plain'}));
                   return t; }"""
    )
    await page.locator(".live-box").dispatch_event("drop", {"dataTransfer": transfer})
    await page.get_by_text("The files landed in ~/Drops and are on the desktop's clipboard").wait_for()
    await page.get_by_role("list", name="Files that landed").get_by_text("/home/rig/Drops/note.txt").wait_for()
    assert await guest(env, rig, "cat /home/rig/Drops/note.txt") == "dropped on the desktop"

    # Dragging out: a drag that begins in the guest while the person drags is shown once they consent to copying
    # out of rigs; before that, the tab says the consent is missing and shows nothing of it.
    await guest(env, rig, "mkdir -p '/home/rig/out' && printf 'carried out' > '/home/rig/out/out one.txt'")
    dragged = page.get_by_role("region", name="Dragged out of the desktop")
    refusal = page.get_by_text("copying from a rig to your computer needs your consent")
    await drag_out(env, rig, page, "file:///home/rig/out/refused.txt\r\n", refusal)
    assert await dragged.count() == 0
    await env.client.call("rig.clipboardGrant", direction="rigToHost", always=True)
    await drag_out(
        env, rig, page, "file:///home/rig/out/out%20one.txt\r\n", dragged.get_by_text("/home/rig/out/out one.txt")
    )
    async with page.expect_download() as downloading:
        await dragged.get_by_role("button", name="Save out one.txt").click()
    download = await downloading.value
    assert download.suggested_filename == "out one.txt"
    assert Path(await download.path()).read_text() == "carried out"
    await accessible_everywhere(page)

    await page.get_by_role("button", name="Hand back").click()
    await page.get_by_role("status").filter(has_text="Desktop connected: watching").wait_for()
    assert (await env.status(rig))["controller"] is None
    assert console.errors == [], console.errors
