"""The forge panel of a workspace's settings, end to end: Debian's Chromium driven by Playwright against a real
server serving the real build and the GitHub API emulator. Not connected, it links to GitHub's app creation page;
an admin connects an app with its id and private key (the box is emptied, the key never shown), sees its
installation, and disconnects. A member sees no forge panel. axe finds no serious or critical violation (light and
dark, desktop and phone); no console errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.async_api import expect

from tests.peers.github_emulator import github_emulator
from tests.support.chromium import CHROMIUM
from tests.support.records import stored_secret
from tests.support.server import running_server
from tests.support.webclient import axe_violations, chromium, open_signed_in

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}


async def test_an_admin_connects_and_disconnects_a_github_app_from_the_workspace_settings(
    tmp_path: Path, dist: Path
) -> None:
    async with github_emulator() as gh, running_server(tmp_path, web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Forged")
        member = await srv.new_user_token(ws, "member", name="member")
        key = gh.add_app(4242)
        gh.install(4242, "acme", ["app"])
        settings = f"{srv.url}/settings/workspaces/{ws}"

        page, console = await open_signed_in(browser, settings, srv.owner_token, viewport=DESKTOP)
        panel = page.get_by_role("region", name="Forge")
        setup = panel.get_by_role("link", name="create the app on GitHub")
        await expect(setup).to_have_attribute(
            "href", re.compile(r"^https://github\.com/settings/apps/new\?name=Hangar&.*contents=write")
        )
        await panel.get_by_label("API address (optional)").fill(gh.api_url)
        await panel.get_by_label("App id").fill("4242")
        await panel.get_by_label("Private key (the .pem file's text)").fill(key)
        await panel.get_by_role("button", name="Connect").click()
        await expect(panel.get_by_text("Connected to github.com as GitHub App 4242")).to_be_visible()
        await expect(panel.get_by_text("acme (selected repositories)")).to_be_visible()
        await expect(panel.get_by_label("Private key (the .pem file's text)")).to_have_value("")
        assert key.splitlines()[1] not in await page.content()
        assert console.errors == []
        await page.context.close()

        for scheme in ("light", "dark"):
            for viewport in (DESKTOP, PHONE):
                page, console = await open_signed_in(
                    browser, settings, srv.owner_token, viewport=viewport, color_scheme=scheme
                )
                panel = page.get_by_role("region", name="Forge")
                await panel.get_by_text("Connected to github.com").wait_for()
                await expect(page.locator('[aria-busy="true"]')).to_have_count(0)
                await panel.scroll_into_view_if_needed()
                where = f"{scheme} {viewport['width']}"
                assert await axe_violations(page) == [], where
                overflow = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                assert overflow <= 0, f"{where} scrolls sideways"
                assert console.errors == []
                await page.context.close()

        page, console = await open_signed_in(browser, settings, srv.owner_token, viewport=DESKTOP)
        panel = page.get_by_role("region", name="Forge")
        await panel.get_by_role("button", name="Disconnect the forge").click()
        await panel.get_by_role("button", name="Disconnect").last.click()
        await expect(panel.get_by_text("Not connected.")).to_be_visible()
        assert stored_secret(srv.data_dir, "forge_credentials/github", ws) is None
        await page.context.close()

        page, console = await open_signed_in(browser, settings, member, viewport=DESKTOP)
        await page.get_by_role("heading", name="Guardrails").wait_for()
        await expect(page.get_by_role("region", name="Forge")).to_have_count(0)
        assert console.errors == []
        await page.context.close()
