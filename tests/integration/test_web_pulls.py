"""A pull request's space in the web client, end to end: Debian's Chromium driven by Playwright against a real
server serving the real build, the GitHub API emulator and a real git server. The space shows who opened the pull
request, which branch into which, its state, its link on the forge, its checks and each file's diff; a guest (who
may read spaces, not diffs) sees the conversation without it. axe finds no serious or critical violation (light and
dark, desktop and phone); nothing scrolls sideways; no console errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import expect

from tests.integration.test_forges_pulls import add_pull_7, pulls_forge
from tests.support.chromium import CHROMIUM
from tests.support.webclient import axe_violations, chromium, open_signed_in

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}


async def test_a_pull_requests_space_shows_its_branches_checks_diff_and_forge_link(tmp_path: Path, dist: Path) -> None:
    async with pulls_forge(tmp_path, web_dist=dist) as f, chromium() as browser:
        pull = add_pull_7(f)
        pull.check_runs.append({"name": "lint", "status": "completed", "conclusion": "failure"})
        opened = await f.owner.call("forge.openPr", workspace_id=f.ws, repoId=f.repo["id"], number=7)
        url = f"{f.srv.url}/workspaces/{f.ws}/spaces/{opened['spaceId']}"

        page, console = await open_signed_in(browser, url, f.srv.owner_token, viewport=DESKTOP)
        panel = page.get_by_role("region", name="Pull request #7")
        await expect(panel).to_be_visible()
        await expect(panel.get_by_text("wants to merge feature into main of acme/app")).to_be_visible()
        await expect(panel.get_by_role("link", name="Open it on the forge")).to_have_attribute(
            "href", f"{f.gh.base}/acme/app/pull/7"
        )
        await expect(panel.get_by_role("listitem").filter(has_text="ci: success")).to_be_visible()
        await expect(panel.get_by_role("listitem").filter(has_text="lint: failure")).to_be_visible()
        await expect(panel.get_by_role("listitem").filter(has_text="deploy: pending")).to_be_visible()
        await expect(panel.get_by_role("heading", name="Files changed (1, +1 −0)")).to_be_visible()
        await panel.get_by_text("feature.txt added").click()
        await expect(panel.get_by_label("Diff of feature.txt")).to_contain_text("+feature work")
        assert console.errors == []
        await page.context.close()

        for scheme in ("light", "dark"):
            for viewport in (DESKTOP, PHONE):
                page, console = await open_signed_in(
                    browser, url, f.srv.owner_token, viewport=viewport, color_scheme=scheme
                )
                panel = page.get_by_role("region", name="Pull request #7")
                await panel.get_by_text("feature.txt added").click()
                await panel.get_by_label("Diff of feature.txt").wait_for()
                await expect(page.locator('[aria-busy="true"]')).to_have_count(0)
                where = f"{scheme} {viewport['width']}"
                assert await axe_violations(page) == [], where
                overflow = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                assert overflow <= 0, f"{where} scrolls sideways"
                assert console.errors == []
                await page.context.close()

        guest = await f.srv.new_user_token(f.ws, "guest", name="gus")
        page, console = await open_signed_in(browser, url, guest, viewport=DESKTOP)
        await expect(page.get_by_role("heading", level=1)).to_have_text(f"{f.repo['name']}#7 · Add the feature")
        await expect(page.get_by_role("region", name="Pull request #7")).to_have_count(0)
        assert console.errors == []
        await page.context.close()
