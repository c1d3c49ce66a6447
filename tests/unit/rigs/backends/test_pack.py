from __future__ import annotations

import json
from pathlib import Path

import pytest

from hangar.errors import Unavailable
from hangar.rigs.image import mirror, pack


def test_mirror_from_deb822_and_one_line_sources(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text(
        "# comment\ndeb [signed-by=/k.gpg] http://security.example.org/debian-security bookworm-security main\n"
    )
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example.net/debian/\nSuites: bookworm bookworm-updates\n"
        "Components: main\n\nTypes: deb-src\nURIs: http://src.example.net/debian\nSuites: bookworm\n"
    )
    assert mirror.debian_mirror("bookworm", tmp_path) == "http://mirror.example.net/debian"
    assert mirror.debian_sources("bookworm", tmp_path) == [
        "deb http://mirror.example.net/debian bookworm main",
        "deb http://mirror.example.net/debian bookworm-updates main",
        "deb http://security.example.org/debian-security bookworm-security main",
    ]
    assert mirror.mirror_hosts(tmp_path) == {"security.example.org", "mirror.example.net"}


def test_no_mirror_is_a_clear_refusal(tmp_path: Path) -> None:
    with pytest.raises(Unavailable) as err:
        mirror.debian_mirror("bookworm", tmp_path)
    assert "no apt source for Debian bookworm" in err.value.message


def test_this_machine_has_a_mirror() -> None:
    assert mirror.debian_mirror().startswith(("http://", "https://"))


def test_progress_steps_from_mmdebstrap_lines() -> None:
    assert pack.step_of("I: downloading packages with apt...") == (3, "downloading packages")
    assert pack.step_of("I: installing remaining packages inside the chroot...") == (6, "installing the packages")
    assert pack.step_of("Get:1 http://x bookworm InRelease") is None


def test_pack_ready_needs_the_marker_of_this_revision(tmp_path: Path) -> None:
    path = pack.pack_path(tmp_path)
    path.mkdir()
    assert not pack.pack_ready(tmp_path)
    (path / pack.MARKER).write_text(json.dumps({"revision": "tools-v0"}))
    assert not pack.pack_ready(tmp_path)
    (path / pack.MARKER).write_text(json.dumps({"revision": pack.TOOLSET_REVISION}))
    assert not pack.pack_ready(tmp_path)  # built before packs took the security suites: rebuilt once
    (path / pack.MARKER).write_text(json.dumps({"revision": pack.TOOLSET_REVISION, "format": pack.MARKER_FORMAT}))
    assert pack.pack_ready(tmp_path)
