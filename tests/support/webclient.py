"""The built web client (``web/dist``) for browser tests: built here when missing or older than its sources, as
``make test`` builds it first; node and npm come from the host (the Makefile installs Debian's where missing).
And what every browser test of it needs: Debian's Chromium driven by Playwright (never a downloaded browser), a
page's console errors, axe's serious and critical violations, connecting a page with a pairing code, and a
browser context that holds a credential already."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import async_playwright

from hangar.identity.pairing import Pairing
from tests.support.build_lock import build_lock
from tests.support.chromium import CHROMIUM
from tests.support.server import RunningServer

WEB = Path(__file__).resolve().parents[2] / "web"
DIST = WEB / "dist"


def _newest_source() -> float:
    sources = [WEB / "index.html", WEB / "package-lock.json", WEB / "vite.config.ts"]
    sources += [p for p in (WEB / "src").rglob("*") if p.is_file()]
    return max(p.stat().st_mtime for p in sources)


def built_web_client() -> Path:
    """``web/dist``, built first when it is missing or stale."""
    with build_lock(WEB):  # another worker may be building it
        index = DIST / "index.html"
        if index.exists() and index.stat().st_mtime >= _newest_source():
            return DIST
        for tool in ("node", "npm"):
            if shutil.which(tool) is None:
                raise RuntimeError(f"{tool} is not installed (the Makefile installs Debian's nodejs and npm)")
        if not (WEB / "node_modules" / ".package-lock.json").exists():
            npm_ci = ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"]
            subprocess.run(npm_ci, cwd=WEB, check=True, timeout=600)
        subprocess.run(["npm", "run", "--silent", "build"], cwd=WEB, check=True, timeout=600)
        return DIST


def axe_source() -> str:
    """axe-core from the client's own dev dependencies (no CDN), injected into pages by the tests."""
    built_web_client()  # the same npm install brings it
    return (WEB / "node_modules" / "axe-core" / "axe.min.js").read_text(encoding="utf-8")


@asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield browser
        finally:
            await browser.close()


class Console:
    """Every console error and uncaught exception of a page (a CSP violation is one)."""

    def __init__(self, page: Any) -> None:
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))


async def axe_violations(page: Any, exclude: Sequence[str] = ()) -> list[str]:
    """Serious and critical axe violations of the page as it is now (``exclude``: CSS selectors left out)."""
    await page.evaluate(axe_source() + "\n;0")
    context = json.dumps({"include": [["body"]], "exclude": [[s] for s in exclude]})
    result = await page.evaluate(f"axe.run({context}, {{resultTypes: ['violations']}})")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']]}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


# The sizes the accessibility checks look at: a desktop browser's window and a phone's.
DESKTOP = {"width": 1400, "height": 1000}
PHONE = {"width": 390, "height": 844}


async def accessible_everywhere(page: Any, exclude: Sequence[str] = ()) -> None:
    """No serious or critical axe violation, light and dark, at desktop and phone width; the page is left light at
    desktop size."""
    for scheme in ("light", "dark"):
        await page.emulate_media(color_scheme=scheme)
        for size in (DESKTOP, PHONE):
            await page.set_viewport_size(size)
            assert await axe_violations(page, exclude=list(exclude)) == [], (scheme, size)
    await page.emulate_media(color_scheme="light")
    await page.set_viewport_size(DESKTOP)


async def picture_point(page: Any, selector: str, size: tuple[int, int], x: int, y: int) -> tuple[float, float]:
    """Where the point (x, y) of a picture ``size`` pixels large is on the canvas ``selector`` draws it on, in the
    page's coordinates (the picture is fitted into the canvas box keeping its aspect, centred)."""
    box = await page.locator(selector).bounding_box()
    scale = min(box["width"] / size[0], box["height"] / size[1])
    left, top = (box["width"] - size[0] * scale) / 2, (box["height"] - size[1] * scale) / 2
    return box["x"] + left + x * scale, box["y"] + top + y * scale


async def pairing_code(srv: RunningServer) -> str:
    return await srv.ctx.service(Pairing).mint_device_code(srv.owner_id)


async def connect_with_code(page: Any, srv: RunningServer) -> None:
    await page.get_by_role("textbox", name="Pairing code").fill(await pairing_code(srv))
    await page.get_by_role("textbox", name="Device name").fill("Test browser")
    await page.get_by_role("button", name="Connect", exact=True).click()
    # Connected once the app has left the connect screen (the credential is stored by then).
    await page.wait_for_url(lambda url: "/connect" not in url)


def stored_credential(url: str, token: str) -> dict[str, Any]:
    """``storage_state`` for ``browser.new_context``: a browser that holds ``token`` for the server of ``url``, kept
    where the app keeps it (what pairing, a sign-in the browser started or a link the person confirmed leaves).
    A ``#token=`` link would not do: the app asks the person before it takes a credential from a link."""
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}"
    return {"cookies": [], "origins": [{"origin": origin, "localStorage": [{"name": "hangar.token", "value": token}]}]}


async def open_signed_in(browser: Any, url: str, token: str, **context: Any) -> tuple[Any, Console]:
    """A new page at ``url`` in a browser context that holds ``token``, with its console followed."""
    page = await (await browser.new_context(storage_state=stored_credential(url, token), **context)).new_page()
    console = Console(page)
    await page.goto(url)
    return page, console


# The manual's screenshots (``make manual-shots``): the browser tests take them at the screens the guides describe,
# so the pictures show the client as it is. The guides reference them as ``/manual/images/<name>.png``.
MANUAL_IMAGES = Path(__file__).resolve().parents[2] / "src" / "hangar" / "site" / "content" / "manual" / "images"
SHOTS_VARIABLE = "HANGAR_WEB_SHOTS"
SHOT_MAX = (1280, 800)


async def shot(page: Any, name: str) -> None:
    """Save the visible part of ``page`` as the manual's ``<name>.png`` when ``HANGAR_WEB_SHOTS`` is set (else do
    nothing). Only the viewport is taken (at most 1280x800 CSS pixels, one image pixel each), so a shot stays
    small; the screen should be settled (what it shows loaded) when this is called."""
    if not os.environ.get(SHOTS_VARIABLE):
        return
    viewport = page.viewport_size or {"width": SHOT_MAX[0], "height": SHOT_MAX[1]}
    width, height = min(viewport["width"], SHOT_MAX[0]), min(viewport["height"], SHOT_MAX[1])
    MANUAL_IMAGES.mkdir(parents=True, exist_ok=True)
    # No caret or animation in the picture: the same screen gives the same image.
    taken = await page.screenshot(
        clip={"x": 0, "y": 0, "width": width, "height": height},
        scale="css",
        animations="disabled",
        caret="hide",
    )
    (MANUAL_IMAGES / f"{name}.png").write_bytes(small_png(taken))


def small_png(png: bytes) -> bytes:
    """``png`` as a 256-colour PNG: a screen of the web client is flat colours and text, so the palette keeps what
    a reader sees at about a third of the size (the manual's images have a budget, tests/unit/site)."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        out = io.BytesIO()
        image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(out, "PNG", optimize=True)
        return out.getvalue()
