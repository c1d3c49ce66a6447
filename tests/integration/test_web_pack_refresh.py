"""Settings → Server → Rigs shows how current each image pack is, end to end (Debian's Chromium driven by
Playwright against a real server serving the real build of ``web/``): when a pack was built and how old it is, the
archive release it was built from, its last check; the check interval (refused out of bounds at the field, saved
within); a check now that finds the archive moved on, a rebuild under way with its step while the pack serves, a
failed rebuild said with its reason, then a rebuild that succeeds. The archive is a loopback peer
(tests/peers/debian_archive.py), the build the stand-in mmdebstrap. axe, light and dark, desktop and phone."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from hangar.core.context import AppContext
from hangar.rigs.backends.enclosure import EnclosureBackend
from hangar.rigs.images.builder import TERMINAL, ensure_pack
from hangar.rigs.part import make_rigs_part
from tests.integration.test_web_settings import PARTS, no_axe_violations, open_signed_in
from tests.peers.debian_archive import DebianArchive
from tests.support.chromium import CHROMIUM
from tests.support.fake_mmdebstrap import install_fake_mmdebstrap
from tests.support.packs import rigs_unavailable
from tests.support.server import running_server
from tests.support.webclient import chromium, shot

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")


async def facts(item: Any) -> dict[str, str]:
    terms = await item.locator("dl.facts dt").all_inner_texts()
    values = await item.locator("dl.facts dd").all_inner_texts()
    return dict(zip(terms, values, strict=True))


async def test_the_rigs_screen_shows_each_packs_age_archive_date_last_check_and_refresh(
    tmp_path: Path, dist: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if (reason := rigs_unavailable()) is not None:
        pytest.skip(f"enclosures cannot run here: {reason}")
    with DebianArchive() as archive:
        apt = archive.apt_root(tmp_path / "apt")
        fake = install_fake_mmdebstrap(tmp_path, monkeypatch, apt_root=apt)
        packs = tmp_path / "packs"
        fake.finish()
        await ensure_pack(packs, None, TERMINAL, apt)
        fake.hold()

        def backend(app: AppContext) -> EnclosureBackend:
            return EnclosureBackend(app.datadir.sub("rigs"), packs_root=packs, apt_root=apt)

        rigs = make_rigs_part(backend)
        async with (
            running_server(tmp_path / "data", parts=[*PARTS, rigs], web_dist=dist, pack_refresh_hours=0) as srv,
            chromium() as browser,
        ):
            page, console = await open_signed_in(browser, srv, "/settings/server/rigs")
            item = page.get_by_role("list", name="Image packs").get_by_role("listitem").first
            await item.get_by_text("Built", exact=True).wait_for()
            shown = await facts(item)
            assert shown["Built"].endswith("(under an hour ago)")
            assert shown["Last check"] == "never" and shown["Refresh"] == "not checked yet"
            assert shown["Archive release"] != "unknown (checked at the next pass)"
            await no_axe_violations(page)

            # The interval: out of bounds is refused at the field; within, it is saved.
            interval = page.get_by_label("Check packs every (hours)")
            assert await interval.input_value() == "0"
            await interval.fill("8761")
            await page.get_by_role("button", name="Save interval").click()
            await page.get_by_role("alert").filter(has_text="hours").wait_for()
            assert await interval.get_attribute("aria-invalid") == "true"
            await interval.fill("12")
            await page.get_by_role("button", name="Save interval").click()
            await page.get_by_role("status").filter(has_text="Check interval saved.").wait_for()

            # A security update: a check now rebuilds the pack, which keeps serving meanwhile.
            archive.dates["bookworm-security"] += timedelta(days=2)
            await page.get_by_role("button", name="Check packs now").click()
            bar = item.get_by_role("progressbar", name="Rebuilding Terminal image")
            await bar.wait_for()
            await item.get_by_text("terminal image: downloading packages (4/10)", exact=False).wait_for()
            assert (await facts(item))["Refresh"] == "being rebuilt (bookworm-security released since)"
            await item.get_by_text("ready", exact=True).wait_for()
            await no_axe_violations(page)
            await item.scroll_into_view_if_needed()
            await shot(page, "settings-rigs-pack-refresh")

            # It fails: the reason is shown, and the pack in place still serves.
            fake.finish(exit_code=2)
            alert = item.get_by_role("alert")
            await alert.filter(has_text="The pack in place keeps serving").wait_for()
            assert "exit code 2" in await alert.inner_text()
            assert (await facts(item))["Refresh"].startswith("failed")
            await page.set_viewport_size({"width": 375, "height": 800})
            await page.emulate_media(color_scheme="dark")
            overflow = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, "the page scrolls sideways at phone width"
            await no_axe_violations(page)

            # Checked again, it succeeds: rebuilt, from the archive's new release.
            fake.hold()
            await page.get_by_role("button", name="Check packs now").click()
            await bar.wait_for()
            fake.finish()
            await expect(item.locator("dl.facts dd").nth(3)).to_have_text(re.compile(r"^rebuilt "), timeout=30_000)
            shown = await facts(item)
            assert shown["Refresh"].startswith("rebuilt") and shown["Last check"] != "never"
            assert await bar.count() == 0 and await alert.count() == 0
            await no_axe_violations(page)
            await page.emulate_media(color_scheme="light")
            await no_axe_violations(page)
            assert console.errors == []
