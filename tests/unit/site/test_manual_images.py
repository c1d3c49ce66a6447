"""The manual's screenshots: every image a guide references exists and is served as a PNG, every committed shot
is one a browser test takes (``shot(page, "<name>")`` in ``tests/integration/test_web_*.py``, retaken by ``make
manual-shots``), so none goes stale unnoticed, and the shots stay small."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from hangar.cli.website import build_site
from hangar.site.build import SiteBuild
from hangar.site.content import CONTENT_DIR, MANUAL_IMAGES_DIR, MANUAL_IMAGES_PATH, manual_images

TESTS = Path(__file__).resolve().parents[2] / "integration"
GUIDES = CONTENT_DIR / "manual" / "guides"
IMAGE_REF = re.compile(r"!\[([^\]]*)\]\((/[^)\s]+)\)")
SHOT_CALL = re.compile(r"\bshot\(\s*\w+,\s*\"([^\"]+)\"\s*\)")
MAX_TOTAL = 1_500_000


def referenced() -> dict[str, list[tuple[str, str]]]:
    """Image path -> (guide, alt text) of every reference."""
    refs: dict[str, list[tuple[str, str]]] = {}
    for guide in sorted(GUIDES.glob("*.md")):
        for alt, target in IMAGE_REF.findall(guide.read_text(encoding="utf-8")):
            refs.setdefault(target, []).append((guide.name, alt))
    return refs


def taken_by_tests() -> set[str]:
    names: set[str] = set()
    for test in TESTS.glob("test_web_*.py"):
        names.update(SHOT_CALL.findall(test.read_text(encoding="utf-8")))
    return names


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.fixture(scope="module")
def site() -> SiteBuild:
    return build_site(None).state.site  # type: ignore[no-any-return]


def test_the_guides_show_screenshots_that_exist_with_alt_text_and_are_served(site: SiteBuild) -> None:
    refs = referenced()
    assert refs, "no guide shows a screenshot"
    origin = site.origin("http://x.test")
    for target, uses in refs.items():
        assert target.startswith(MANUAL_IMAGES_PATH + "/"), f"{target} is not in the manual's image folder"
        name = target.removeprefix(MANUAL_IMAGES_PATH + "/")
        assert (MANUAL_IMAGES_DIR / name).is_file(), f"{uses[0][0]} shows {target}, which does not exist"
        assert all(alt.strip() for _, alt in uses), f"{target} is shown without alt text in {uses}"
        served = origin.resource(target)
        assert served is not None, target
        assert served.body == (MANUAL_IMAGES_DIR / name).read_bytes()
        assert (b"content-type", b"image/png") in served.headers


def test_every_committed_shot_is_taken_by_a_browser_test_and_shown_by_a_guide() -> None:
    committed = set(manual_images())
    taken = {f"{n}.png" for n in taken_by_tests()}
    assert committed, "no screenshot is committed (make manual-shots takes them)"
    assert committed - taken == set(), "shots no browser test takes any more (they would go stale)"
    shown = {t.removeprefix(MANUAL_IMAGES_PATH + "/") for t in referenced()}
    assert committed - shown == set(), "shots no guide shows"
    assert taken - committed == set(), "shots a test takes that are not committed (run make manual-shots)"


def test_the_shots_stay_small() -> None:
    images = manual_images()
    for name, data in images.items():
        width, height = png_size(data)
        assert width <= 1280 and height <= 800, f"{name} is {width}x{height}"
    assert sum(map(len, images.values())) <= MAX_TOTAL


def test_only_png_files_are_served_from_the_image_folder(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "notes.txt").write_text("not an image")
    (tmp_path / "sub.png").mkdir()
    assert list(manual_images(tmp_path)) == ["a.png"]
    assert manual_images(tmp_path / "missing") == {}
