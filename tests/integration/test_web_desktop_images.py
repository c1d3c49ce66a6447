"""The desktop images form on Settings, Server, Rigs, in Chromium against the real server: the images imported are
listed; an import without a SHA-256 is refused at that field, one whose SHA-256 does not match with the server's
sentence, and nothing is listed after either; axe finds nothing, light and dark, desktop and phone width."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from hangar.rigs.backends.enclosure import EnclosureBackend
from hangar.rigs.backends.fullvm import imports
from hangar.rigs.part import make_rigs_part
from tests.integration.test_web_settings import PARTS, no_axe_violations, open_signed_in
from tests.support.chromium import CHROMIUM
from tests.support.desktopimage import needs_qemu, sha256_of
from tests.support.server import running_server
from tests.support.webclient import chromium

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)"),
    needs_qemu,
]


@pytest.mark.parametrize(
    ("viewport", "scheme"), [({"width": 1280, "height": 900}, "light"), ({"width": 375, "height": 800}, "dark")]
)
async def test_the_import_form_refuses_at_the_field_and_lists_images(
    tmp_path: Path, dist: Path, viewport: dict[str, int], scheme: str
) -> None:
    image = tmp_path / "a.qcow2"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(image), "1G"], check=True)
    rigs = make_rigs_part(lambda app: EnclosureBackend(app.datadir.sub("rigs"), packs_root=tmp_path / "packs"))
    async with running_server(tmp_path / "data", parts=[*PARTS, rigs], web_dist=dist) as srv, chromium() as browser:
        # One image imported earlier, as its record and file stand in the images directory.
        root = srv.ctx.datadir.sub("rigs", "images")
        known = imports.ImportedImage("img-" + "a" * 24, "Team desktop", "a" * 64, 1 << 30, 8 << 30,
                                      "2026-01-01T00:00:00Z", "fullvm-tcg", 61.5)  # fmt: skip
        (root / f"{known.image_id}.qcow2").write_bytes(b"")
        (root / f"{known.image_id}.json").write_text(json.dumps(known.__dict__))
        page, _console = await open_signed_in(browser, srv, "/settings/server/rigs", viewport=viewport,
                                             color_scheme=scheme)  # fmt: skip
        section = page.get_by_role("region", name="Desktop images for full VMs")
        await section.get_by_role("list", name="Desktop images").get_by_text("Team desktop").wait_for()
        await no_axe_violations(page)

        await section.get_by_label("Image file or URL").fill(str(image))
        await section.get_by_label("Name").fill("Mine")
        await section.get_by_label("Check it under").select_option("fullvm-tcg")
        await section.get_by_role("button", name="Import image").click()
        said = section.get_by_label("SHA-256").locator("xpath=..").get_by_role("alert")
        await said.wait_for()
        assert "sha256" in (await said.inner_text())
        assert await section.get_by_label("SHA-256").get_attribute("aria-invalid") == "true"
        await no_axe_violations(page)

        await section.get_by_label("SHA-256").fill("0" * 64)
        await section.get_by_role("button", name="Import image").click()
        mismatch = section.get_by_role("alert").filter(has_text="SHA-256 differs from the one given")
        await mismatch.wait_for()
        assert sha256_of(image) not in await mismatch.inner_text()  # the digest found is never told
        await no_axe_violations(page)
        assert sorted(p.name for p in root.iterdir()) == [f"{known.image_id}.json", f"{known.image_id}.qcow2"]
