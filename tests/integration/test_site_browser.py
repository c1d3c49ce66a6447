"""Headless Chromium (Debian's) loads the site over CDP at phone width and at desktop width: the pages render
with their navigation, nothing overflows sideways, and a screenshot is taken of each."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from tests.integration.site_env import RunningSite, serve_site
from tests.support.chromium import CHROMIUM, headless_chromium

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make apt-deps)")


@pytest.fixture(scope="module")
def site() -> Iterator[RunningSite]:
    with serve_site() as running:
        yield running


class Page:
    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        my_id = self.next_id
        await self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            msg = json.loads(await asyncio.wait_for(self.ws.recv(), 30))
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return dict(msg.get("result", {}))
            self.events.append(msg)

    async def wait_event(self, name: str) -> None:
        while not any(e.get("method") == name for e in self.events):
            self.events.append(json.loads(await asyncio.wait_for(self.ws.recv(), 30)))
        self.events = [e for e in self.events if e.get("method") != name]

    async def goto(self, url: str) -> None:
        await self.call("Page.navigate", url=url)
        await self.wait_event("Page.loadEventFired")

    async def js(self, expression: str) -> Any:
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    async def screenshot(self, path: Path) -> bytes:
        data = base64.b64decode((await self.call("Page.captureScreenshot", format="png"))["data"])
        path.write_bytes(data)
        return data


@contextlib.asynccontextmanager
async def chromium_page(profile: Path, width: int, height: int, mobile: bool) -> AsyncIterator[Page]:
    async with headless_chromium(profile) as endpoint:
        async with httpx.AsyncClient() as http:
            targets = (await http.get(f"http://{endpoint}/json/list")).json()
        page_ws = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        async with websockets.connect(page_ws, max_size=64 << 20) as ws:
            page = Page(ws)
            await page.call("Page.enable")
            await page.call(
                "Emulation.setDeviceMetricsOverride",
                width=width,
                height=height,
                deviceScaleFactor=1,
                mobile=mobile,
            )
            yield page


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


async def test_phone_width_landing_and_manual_page(site: RunningSite, tmp_path: Path) -> None:
    async with chromium_page(tmp_path / "profile", 390, 844, mobile=True) as page:
        await page.goto(site.url + "/")
        assert await page.js("document.querySelector('h1').textContent") == "Hangar"
        nav = await page.js("[...document.querySelectorAll('.topnav a')].map(a => a.textContent)")
        assert nav == ["Manual", "Compare", "Developers", "Changelog", "About"]
        assert await page.js("document.documentElement.scrollWidth <= window.innerWidth")
        assert await page.js("getComputedStyle(document.querySelector('.topnav')).display") != "none"
        shot = await page.screenshot(tmp_path / "landing-phone.png")
        assert _png_size(shot) == (390, 844) and len(shot) > 10_000

        await page.goto(site.url + "/manual/concepts/pipelines")
        assert await page.js("document.querySelector('main h1').textContent") == "Pipelines"
        links = await page.js("document.querySelectorAll('#manual-nav a').length")
        assert links >= 117
        assert await page.js("document.querySelector('#manual-nav a[aria-current]').textContent") == "Pipelines"
        assert await page.js("document.querySelector('.tocjump').offsetParent !== null")
        assert await page.js("document.documentElement.scrollWidth <= window.innerWidth")
        # Wide tables scroll inside themselves instead of widening the page.
        assert await page.js("getComputedStyle(document.querySelector('main table')).overflowX") == "auto"
        shot = await page.screenshot(tmp_path / "manual-phone.png")
        assert _png_size(shot) == (390, 844)


async def test_desktop_width_shows_the_sidebar_beside_the_text(site: RunningSite, tmp_path: Path) -> None:
    async with chromium_page(tmp_path / "profile", 1280, 900, mobile=False) as page:
        await page.goto(site.url + "/manual/guides/pair-a-device")
        side = await page.js("JSON.stringify(document.querySelector('#manual-nav').getBoundingClientRect())")
        main = await page.js("JSON.stringify(document.querySelector('main').getBoundingClientRect())")
        side_box, main_box = json.loads(side), json.loads(main)
        assert side_box["right"] <= main_box["left"]  # sidebar in its own column, left of the text
        assert side_box["top"] < 200
        assert not await page.js("document.querySelector('.tocjump').offsetParent")
        shot = await page.screenshot(tmp_path / "manual-desktop.png")
        assert _png_size(shot) == (1280, 900)
