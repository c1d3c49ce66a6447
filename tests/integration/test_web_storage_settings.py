"""The server settings' Storage and retention screen end to end (Debian's Chromium, Playwright, the real build of
``web/``): each workspace's database and files and the server's own, how long events and audit rows are kept and
what the last retention pass deleted, per workspace by name; axe-clean light and dark, at desktop and phone width."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangar.identity import IdentityService
from hangar.retention import RetentionSchedule
from tests.integration.test_web_settings import open_signed_in
from tests.support.chromium import CHROMIUM
from tests.support.server import running_server
from tests.support.webclient import axe_violations, chromium

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")


async def test_the_storage_screen_shows_each_workspace_and_the_last_retention_pass(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path / "data", web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Team")
        (srv.data_dir / ws / "spaces").mkdir(parents=True, exist_ok=True)
        (srv.data_dir / ws / "spaces" / "notes.txt").write_bytes(b"x" * 2_500_000)
        await srv.ctx.service(IdentityService).set_setting("retention.eventsDays", 30)
        assert await srv.ctx.service(RetentionSchedule).prune_now() is not None

        for options in ({}, {"viewport": {"width": 375, "height": 800}, "color_scheme": "dark"}):
            page, console = await open_signed_in(browser, srv, "/settings/server/storage", **options)
            await page.get_by_role("heading", name="Storage and retention").wait_for()
            sizes = page.get_by_role("table", name="Bytes of the data directory per workspace and for the server")
            team = sizes.get_by_role("row").filter(has_text="Team")
            await team.wait_for()
            assert "2.5 MB" in await team.inner_text()  # its files: the space's notes
            await sizes.get_by_role("row").filter(has_text="The server itself").wait_for()
            await page.get_by_text("30 days").wait_for()
            passes = page.get_by_role("table", name="What the last retention pass deleted in each database")
            await passes.get_by_role("row").filter(has_text="Team").wait_for()
            assert await axe_violations(page) == []
            assert console.errors == []
            await page.context.close()
