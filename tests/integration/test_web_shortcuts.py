"""The web client's keyboard shortcuts in Debian's Chromium, driven by Playwright, against a real server: `?` opens
the list as a modal dialog (keyboard focus inside it, Escape closes it), `g p`, `g a`, `g s` and `g h` navigate
within the current workspace, `/` focuses the screen's filter, and keys typed into a field stay text."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangar.identity import IdentityService
from tests.support.chromium import CHROMIUM
from tests.support.server import running_server
from tests.support.webclient import axe_violations, built_web_client, chromium, open_signed_in

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")


async def test_shortcuts_open_their_list_and_navigate_the_current_workspace(tmp_path: Path) -> None:
    dist = built_web_client()
    async with running_server(tmp_path, web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Kilo")
        token = await srv.ctx.service(IdentityService).issue_device(srv.owner_id, "shortcuts-browser")
        page, console = await open_signed_in(browser, f"{srv.url}/workspaces/{ws}", token)
        await page.get_by_role("heading", name="Kilo", exact=True).wait_for()
        await page.get_by_role("status").filter(has_text="Connected").wait_for()

        # ? opens the list: a modal dialog that holds the keyboard focus; Escape closes it and focus comes back.
        await page.keyboard.press("?")
        dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
        await dialog.wait_for()
        assert await dialog.get_by_role("row").filter(has_text="pipelines").count() == 1
        assert await page.evaluate("!!document.activeElement.closest('dialog[open]')")
        for _ in range(4):
            await page.keyboard.press("Tab")
            assert await page.evaluate("!!document.activeElement.closest('dialog[open]')"), "focus left the dialog"
        assert await axe_violations(page) == []
        # Shortcuts do nothing while the dialog is open.
        await page.keyboard.press("g")
        await page.keyboard.press("p")
        assert page.url == f"{srv.url}/workspaces/{ws}"
        await page.keyboard.press("Escape")
        await dialog.wait_for(state="hidden")

        # g p: the current workspace's pipelines.
        await page.keyboard.press("g")
        await page.keyboard.press("p")
        await page.get_by_role("heading", name="Pipelines", exact=True).wait_for()
        assert page.url == f"{srv.url}/workspaces/{ws}/pipelines"

        # g a: its audit log, where / focuses the filter; the keys typed there are text, not shortcuts.
        await page.keyboard.press("g")
        await page.keyboard.press("a")
        await page.get_by_role("heading", name="Audit log and events").wait_for()
        assert page.url == f"{srv.url}/workspaces/{ws}/audit"
        action = page.get_by_role("textbox", name="Action")
        await action.wait_for()  # the filter renders after the heading; `/` focuses what is there
        await page.keyboard.press("/")
        assert await action.evaluate("el => el === document.activeElement")
        await page.keyboard.type("g h?")
        assert await action.input_value() == "g h?"
        assert page.url == f"{srv.url}/workspaces/{ws}/audit"
        assert await page.get_by_role("dialog").count() == 0
        await action.evaluate("el => el.blur()")

        # g s: its settings; g h: home (and g p from home returns to the workspace last visited).
        await page.keyboard.press("g")
        await page.keyboard.press("s")
        await page.wait_for_url(f"{srv.url}/settings/workspaces/{ws}")
        await page.keyboard.press("g")
        await page.keyboard.press("h")
        await page.get_by_role("heading", name="Workspaces", exact=True).wait_for()
        assert page.url == f"{srv.url}/"
        await page.keyboard.press("g")
        await page.keyboard.press("p")
        await page.wait_for_url(f"{srv.url}/workspaces/{ws}/pipelines")
        assert console.errors == []


async def test_the_shortcuts_list_is_accessible_dark_at_phone_width(tmp_path: Path) -> None:
    dist = built_web_client()
    async with running_server(tmp_path, web_dist=dist) as srv, chromium() as browser:
        token = await srv.ctx.service(IdentityService).issue_device(srv.owner_id, "shortcuts-phone")
        page, console = await open_signed_in(
            browser, f"{srv.url}/", token, viewport={"width": 375, "height": 740}, color_scheme="dark"
        )
        await page.get_by_role("heading", name="Workspaces", exact=True).wait_for()
        # From a screen outside any workspace, with none visited yet, the workspace shortcuts do nothing.
        await page.keyboard.press("g")
        await page.keyboard.press("p")
        assert page.url == f"{srv.url}/"
        await page.keyboard.press("?")
        dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
        await dialog.wait_for()
        assert await axe_violations(page) == []
        box = await dialog.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 375
        await dialog.get_by_role("button", name="Close").click()
        await dialog.wait_for(state="hidden")
        assert console.errors == []
