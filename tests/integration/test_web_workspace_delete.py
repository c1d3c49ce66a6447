"""Deleting a workspace from its settings in the web client, end to end: Debian's Chromium driven by Playwright
against a real server serving the real build. The danger zone's button stays disabled until the workspace's name
is typed exactly; the deletion then runs and the browser lands on the home screen without the workspace. A member
sees no danger zone. axe finds no serious or critical violation (light and dark, desktop and phone); no console
errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import expect

from tests.support.chromium import CHROMIUM
from tests.support.rpc import RpcClient
from tests.support.server import running_server
from tests.support.webclient import axe_violations, chromium, open_signed_in

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}


async def test_the_danger_zone_deletes_the_workspace_once_its_name_is_typed(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path, web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Old project")
        kept = await srv.new_workspace("Kept")
        member = await srv.new_user_token(ws, "member", name="member")
        settings = f"{srv.url}/settings/workspaces/{ws}"

        # axe on the settings page with the danger zone, light and dark, desktop and phone.
        for scheme in ("light", "dark"):
            for viewport in (DESKTOP, PHONE):
                page, console = await open_signed_in(
                    browser, settings, srv.owner_token, viewport=viewport, color_scheme=scheme
                )
                zone = page.get_by_role("region", name="Danger zone")
                await zone.get_by_role("button", name="Delete workspace").wait_for()
                await expect(page.locator('[aria-busy="true"]')).to_have_count(0)
                await zone.scroll_into_view_if_needed()
                where = f"{scheme} {viewport['width']}"
                assert await axe_violations(page) == [], where
                overflow = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                assert overflow <= 0, f"{where} scrolls sideways"
                assert console.errors == []
                await page.context.close()

        # A member sees the settings but no danger zone.
        page, console = await open_signed_in(browser, settings, member, viewport=DESKTOP)
        await page.get_by_role("heading", name="Guardrails").wait_for()
        await expect(page.get_by_role("region", name="Danger zone")).to_have_count(0)
        await page.context.close()

        page, console = await open_signed_in(browser, settings, srv.owner_token, viewport=DESKTOP)
        zone = page.get_by_role("region", name="Danger zone")
        button = zone.get_by_role("button", name="Delete workspace")
        field = zone.get_by_role("textbox", name="Type the workspace's name, Old project, to confirm")
        await expect(button).to_be_disabled()
        await field.fill("old project")  # exactly: case and all
        await expect(button).to_be_disabled()
        await field.fill("Old project")
        await expect(button).to_be_enabled()
        await button.click()
        await page.wait_for_url(f"{srv.url}/")
        await expect(page.get_by_role("link", name="Kept")).to_have_count(1)
        await expect(page.get_by_role("link", name="Old project")).to_have_count(0)
        assert console.errors == []

        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            assert [w["id"] for w in await c.call("workspaces.list")] == [kept]
            deletions = await c.call("workspaces.deletions")
        assert [(d["workspace_id"], d["name"], d["state"]) for d in deletions] == [(ws, "Old project", "deleted")]
        assert not (srv.data_dir / ws).exists()
