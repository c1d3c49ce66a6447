"""A phone rig's view end to end: Debian's Chromium, driven by Playwright, shows the space page of a real server
(real build of ``web/``) whose phone rig drives the test phone (``tests.peers.adb_device``, adbd's wire protocol)
through Debian's adb. The view shows the phone's screen (the ``mobile_use`` screenshot, fetched again as it goes:
phones have no live lane), its serial and screen size; without control its keys are disabled and nothing reaches
the phone; with control a click on the screen is a tap at the device pixel it covers, a drag is a swipe, Back and
Home are the phone's keys and typed text reaches it, each read back from what the phone was told. axe finds no
serious or critical violation, light and dark, desktop and phone width; no console errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.mobile_env import PhoneEnv, phone_server
from tests.peers.adb_device import SCREEN
from tests.support.chromium import CHROMIUM
from tests.support.webclient import (
    DESKTOP,
    accessible_everywhere,
    chromium,
    open_signed_in,
    picture_point,
    shot,
)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

CANVAS = "canvas.phone-canvas"
DRIVEN = "The phone's screen: you have control (tap, swipe and keys go to the phone)"
EVENT_BOUND_MS = 30_000  # a bound against hangs only: how long the page waits for the phone to be told


async def at(page: Any, x: int, y: int) -> tuple[float, float]:
    """Where the device pixel (x, y) is on the drawn screen."""
    return await picture_point(page, CANVAS, SCREEN, x, y)


async def told(page: Any, env: PhoneEnv, count: int) -> list[tuple[str, ...]]:
    """What reached the phone's screen, once at least ``count`` things did (waited for in the page's loop)."""
    for _ in range(EVENT_BOUND_MS // 100):
        if len(env.phone.events) >= count:
            return env.phone.events
        await page.wait_for_timeout(100)
    raise AssertionError(f"the phone was told {env.phone.events}, not {count} things")


def near(got: tuple[str, ...], want: tuple[int, ...]) -> bool:
    """A point on the drawn screen maps to a device pixel up to rounding (the screen is scaled down)."""
    return len(got) == len(want) and all(abs(int(g) - w) <= 4 for g, w in zip(got, want, strict=True))


async def test_the_phone_view_shows_the_screen_and_drives_the_phone_in_control(
    monkeypatch: pytest.MonkeyPatch, dist: Path
) -> None:
    async with phone_server(monkeypatch, web_dist=dist) as env, chromium() as browser:
        rig = await env.open_phone()
        page, console = await open_signed_in(
            browser, f"{env.srv.url}/workspaces/{env.ws}/rigs/{rig}", env.srv.owner_token, viewport=DESKTOP
        )
        tab = page.get_by_role("tab", name="Phone")
        await tab.wait_for()
        assert await tab.get_attribute("aria-selected") == "true"
        status = page.get_by_role("status").filter(has_text=f"Phone {env.phone.serial}, screen 1080 × 1920: watching")
        await status.wait_for()
        await page.wait_for_function(f"() => Number(document.querySelector('{CANVAS}')?.dataset.shots) > 0")
        await page.get_by_text("The phone has no live picture").wait_for()
        await page.get_by_role("img", name="The phone's screen").wait_for()

        # Without control the keys are disabled and a click on the screen tells the phone nothing.
        assert await page.get_by_role("button", name="Back", exact=True).is_disabled()
        assert await page.get_by_role("button", name="Home", exact=True).is_disabled()
        assert await page.get_by_label("Type on the phone").is_disabled()
        x, y = await at(page, 540, 960)
        await page.mouse.click(x, y)
        await accessible_everywhere(page)

        await page.get_by_role("button", name="Take control").click()
        await page.get_by_role("status").filter(has_text="you drive the phone").wait_for()
        assert env.phone.events == []  # the click without control was never sent
        x, y = await at(page, 540, 960)
        await page.mouse.click(x, y)
        events = await told(page, env, 1)
        assert events[0][0] == "tap" and near(events[0][1:], (540, 960)), events

        # A drag is a swipe from where it began to where it ended.
        sx, sy = await at(page, 540, 1200)
        ex, ey = await at(page, 540, 400)
        await page.mouse.move(sx, sy)
        await page.mouse.down()
        await page.mouse.move(ex, ey, steps=5)
        await page.mouse.up()
        events = await told(page, env, 2)
        assert events[1][0] == "swipe" and near(events[1][1:5], (540, 1200, 540, 400)), events
        assert 50 <= int(events[1][5]) <= 5000

        # Back and Home are the phone's keys; text typed in the field reaches its focused field.
        await page.get_by_role("button", name="Back", exact=True).click()
        await told(page, env, 3)
        await page.get_by_role("button", name="Home", exact=True).click()
        await told(page, env, 4)
        await page.get_by_label("Type on the phone").fill("hello phone")
        await page.get_by_role("button", name="Send text").click()
        events = await told(page, env, 5)
        assert events[2:5] == [("key", "4"), ("key", "3"), ("text", "hello phone")], events
        # Keys pressed on the screen itself: a character is typed, Enter is the phone's Enter.
        screen = page.get_by_role(
            "img", name="The phone's screen: you have control (tap, swipe and keys go to the phone)"
        )
        await screen.press("x")
        await told(page, env, 6)
        await screen.press("Enter")
        events = await told(page, env, 7)
        assert events[5:7] == [("text", "x"), ("key", "KEYCODE_ENTER")], events
        await accessible_everywhere(page)
        await shot(page, "rigs-phone")

        await page.get_by_role("button", name="Hand back").click()
        await page.get_by_role("status").filter(has_text="watching").wait_for()
        assert await page.get_by_role("button", name="Back", exact=True).is_disabled()
        assert (await env.status(rig))["controller"] is None
        assert console.errors == [], console.errors


async def test_opening_a_phone_from_the_space_says_what_is_missing_then_opens_once_a_device_is_named(
    monkeypatch: pytest.MonkeyPatch, dist: Path
) -> None:
    async with phone_server(monkeypatch, configure=False, web_dist=dist) as env, chromium() as browser:
        page, console = await open_signed_in(
            browser, f"{env.srv.url}/workspaces/{env.ws}/spaces/{env.space}", env.srv.owner_token, viewport=DESKTOP
        )
        # No device named in the server's settings: the open is refused, in the server's words.
        await page.get_by_role("button", name="Open a phone").click()
        refused = page.get_by_role("alert").filter(has_text="no device or emulator is configured")
        await refused.wait_for()
        assert await page.get_by_role("tab", name="Phone").count() == 0
        await accessible_everywhere(page)
        # Once a device is named, the same button opens the phone's tab.
        await env.setting("rigs.mobile.device", env.phone.serial)
        await page.get_by_role("button", name="Open a phone").click()
        tab = page.get_by_role("tab", name="Phone")
        await tab.wait_for()
        await page.get_by_role("status").filter(has_text=f"Phone {env.phone.serial}").wait_for()
        assert await page.get_by_role("button", name="Open a phone").count() == 0  # one phone per space
        assert console.errors == [], console.errors
